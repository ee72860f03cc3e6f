import { z } from 'zod'
import { MAX_QUESTION_LENGTH, NAME_PATTERN, newQuestionId } from '@cordis-subagents/shared'
import type { Tool } from '@cordis-subagents/tools'
import { AgentError } from './errors.js'

export interface AskParentOptions {
  /** The tool's name (default `ask_parent`). */
  name?: string
  /** What the model reads about it (default: ask whoever gave you the task, when you cannot go on without an answer). */
  description?: string
}

const DEFAULT_DESCRIPTION = 'Ask whoever gave you this task a question, when you cannot go on without their answer '
  + '(a missing fact, a choice only they can make). Your work pauses until they answer; the answer is this tool\'s result. '
  + 'Ask one clear, self-contained question; do not use it for progress reports.'

const input = z.object({
  question: z.string().min(1).max(MAX_QUESTION_LENGTH).describe('The question, complete enough to answer without your context.'),
})

/**
 * A tool that lets an agent ask its parent (or, at the root, the host): its call suspends with an
 * `ask` question, the turn parks (`pending`), and the answer given to `resume` is the call's result.
 */
export function askParentTool(options: AskParentOptions = {}): Tool<typeof input> {
  if (!options || typeof options !== 'object') throw new AgentError('INVALID_OPTIONS', 'askParentTool() takes an options object { name?, description? }.')
  const { name = 'ask_parent', description = DEFAULT_DESCRIPTION } = options
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
    throw new AgentError('INVALID_OPTIONS', `askParentTool: name ${JSON.stringify(name)} is not a tool name (1-64 of A-Z a-z 0-9 _ -).`)
  }
  if (typeof description !== 'string' || !description.trim()) throw new AgentError('INVALID_OPTIONS', 'askParentTool: description must be a non-empty string.')
  return {
    name,
    description,
    input,
    execute: ({ question }) => ({ content: '', suspend: { question: { id: newQuestionId(), kind: 'ask', text: question, path: [] } } }),
    resume: (answer) => ({ content: answer }),
  }
}
