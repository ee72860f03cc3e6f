import type { Agent, DelegationState } from '@cordis-subagents/agent'
import type { ContinuableRunInfo, SubagentHandle, SubagentService } from '@cordis-subagents/subagents-service'
import { settleStarted } from '../continued.js'
import { DEFAULT_MAX_OUTPUT_BYTES } from '../config.js'
import type { Tool } from '@cordis-subagents/tools'
import { MAX_MESSAGE_LENGTH } from '@cordis-subagents/shared'
import { z } from 'zod'
import { BACKGROUND_HANDLE, failed } from './format.js'
import type { VerbOptions } from './options.js'

/** Most continuable subagents a refusal lists. */
const MAX_LISTED = 10
/** Delegations that have not ended: nothing to continue yet. */
const UNFINISHED: ReadonlySet<DelegationState> = new Set(['running', 'pending'])

/**
 * `<prefix>_continue`: gives one of the caller's own subagents that already finished a follow-up
 * message, as a new turn on its transcript (`ctx.subagents.continue`), and returns that turn's
 * result as the subagent tool would. It never re-runs the finished turn.
 */
export function buildContinue(subagents: SubagentService, options: VerbOptions): Tool<any> {
  return {
    name: options.names.continue,
    description: [
      'Send a follow-up to one of your subagents that has finished: it continues with everything it did and said so far, and',
      'this call returns its new answer. Name it by the description you gave it, its background handle ("bg-1") or its run id.',
      'Use it for a correction or a next step on the same work, instead of delegating from scratch.',
    ].join(' '),
    input: z.strictObject({
      subagent: z.string().min(1).max(256).describe('Which subagent: the description you gave it, its background handle, or its run id.'),
      message: z.string().min(1).max(MAX_MESSAGE_LENGTH).refine((text) => text.trim().length > 0, 'The message must not be only whitespace.')
        .describe('What to tell it: the follow-up task or correction.'),
    }),
    execute: async (input, exec) => {
      const parent = exec.agent as Agent
      const own = subagents.continuable.list(parent)
      let runId: string | undefined
      try {
        runId = pick(subagents, parent, own, input.subagent)
      } catch (error) {
        return failed(error)
      }
      if (!runId) return { isError: true, content: unknownText(input.subagent, own) }
      let run: SubagentHandle
      try {
        run = await subagents.continue(runId, input.message, { parent, signal: exec.signal })
      } catch (error) {
        return failed(error)
      }
      const result = await settleStarted(subagents, run, {
        provider: run.info.provider, timeout: options.replyTimeout, maxOutputBytes: DEFAULT_MAX_OUTPUT_BYTES, questions: 'answer',
      }, exec, options.replies)
      return { ...result, content: `[Subagent ${run.id} continued]\n\n${result.content}` }
    },
  }
}

/**
 * The run id `name` stands for among the caller's own finished subagents (the most recent of a description): a continuable
 * one first, else one that ended and is no longer continuable, whose continue the service refuses with its reason.
 */
function pick(subagents: SubagentService, parent: Agent, own: ContinuableRunInfo[], name: string): string | undefined {
  if (BACKGROUND_HANDLE.test(name)) return subagents.background.peek(parent)?.get(name).run?.id
  return own.find((run) => run.runId === name)?.runId ?? own.findLast((run) => run.label === name)?.runId ?? ended(subagents, parent, name)
}

/**
 * A run the caller itself delegated that ended, by run id or the latest listed of a description, as the account of its tree
 * lists it (`ctx.subagents.account`, at most its 1,000 latest ended delegations). Not continuable now (else it was listed
 * as such): the service's continue says why, e.g. that its book dropped it to bound memory. Another agent's delegation is
 * never named here (its `parentId` differs), so nothing tells this caller that one exists.
 */
function ended(subagents: SubagentService, parent: Agent, name: string): string | undefined {
  let root = parent
  while (root.parent) root = root.parent
  const mine = (subagents.account(root)?.listed ?? []).filter((entry) => entry.parentId === parent.id && !UNFINISHED.has(entry.state))
  return mine.find((entry) => entry.runId === name)?.runId ?? mine.findLast((entry) => entry.label === name)?.runId
}

function unknownText(name: string, own: ContinuableRunInfo[]): string {
  const listed = own.slice(-MAX_LISTED).reverse().map((run) => `${JSON.stringify(run.label ?? '')} (${run.runId})`)
  return `You have no finished subagent ${JSON.stringify(name.slice(0, 100))} that can be continued. `
    + (listed.length ? `Yours, most recent first: ${listed.join(', ')}.` : 'None of yours can be continued now (a subagent stays continuable for a while after it finished).')
}
