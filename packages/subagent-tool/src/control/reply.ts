import type { SubagentService } from '@cordis-subagents/subagents-service'
import { continueParked } from '../continued.js'
import { DEFAULT_MAX_OUTPUT_BYTES } from '../config.js'
import type { Tool } from '@cordis-subagents/tools'
import { MAX_ANSWER_LENGTH } from '@cordis-subagents/shared'
import { z } from 'zod'
import type { VerbOptions } from './options.js'

/**
 * `<prefix>_reply`: answers a question one of the caller's children parked on (the question came
 * as a subagent tool's result) and waits for its next outcome, formatted as the subagent tool
 * formats a result (it may be another question). Only the caller's own parked children.
 */
export function buildReply(subagents: SubagentService, options: VerbOptions): Tool<any> {
  // The replies in flight: cancelled with their caller's turn, or by the plugin's unload.
  const inFlight = options.replies
  return {
    name: options.names.reply,
    description: [
      'Answer a question one of your subagents asked (its tool result said it is parked and waits for your answer).',
      'The subagent continues with your answer; this call returns its next result: its final answer, or its next question.',
    ].join(' '),
    input: z.strictObject({
      handle: z.string().min(1).max(256).describe('The run id of the subagent that asked (as its question named it, e.g. "run-…").'),
      answer: z.string().min(1).max(MAX_ANSWER_LENGTH).refine((text) => text.trim().length > 0, 'The answer must not be only whitespace.').describe('Your answer to its question.'),
    }),
    execute: (input, exec) => {
      const run = subagents.parked.get(exec.agent as never, input.handle)
      const outcomeOptions = {
        provider: run?.info.provider ?? 'unknown', timeout: options.replyTimeout, maxOutputBytes: DEFAULT_MAX_OUTPUT_BYTES, questions: 'answer' as const,
      }
      // A question that comes back through a reply goes to this model again (a reply never suspends).
      return continueParked(subagents, outcomeOptions, input.handle, input.answer, exec, inFlight, undefined, false)
    },
  }
}
