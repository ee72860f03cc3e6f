import { Schema } from 'cordis'
import { count, countProblem, duration, durationProblem, NAME_PATTERN } from '@cordis-subagents/shared'
import { SubagentError } from '@cordis-subagents/subagents-service'

/** Config shared by the in-process providers (`spawn`, `fork`). */
export interface InProcessConfig {
  name: string
  maxSteps?: number
  description?: string
  askParent: boolean
  askParentTool: string
  maxParkedMs: number
}

/** The note every in-process child's system prompt ends with. */
export const SUBAGENT_NOTE = [
  'You are a subagent: another agent delegated this task to you.',
  'Work on it on your own with the tools you have.',
  'Your final message is returned to the delegating agent as your whole answer, so make it complete and self-contained.',
].join(' ')

export interface InProcessProviderOptions {
  name: string
  description?: string
  /** true: the child starts with the parent's completed turns (fork); false: a fresh child (spawn). */
  inheritsParentContext: boolean
  /** Step limit of each child; default: the agent runtime's. */
  maxSteps?: number
  /** Give each child an ask tool (`askParentTool`), so it can ask its parent a question and park. */
  askParent?: boolean
  /** The ask tool's name (default `ask_parent`). */
  askParentTool?: string
  /** Milliseconds a child may wait parked on a question before it ends `timeout` (default 1 h). */
  maxParkedMs?: number
}

/** How long a child may wait parked on a question by default (1 h), as provider-acp's `maxParkedMs`. */
export const DEFAULT_MAX_PARKED_MS = 3_600_000

export namespace InProcessConfig {
  /** What a user writes: every key is optional (`name` has a default). */
  export type Input = Partial<InProcessConfig>
}

export function inProcessConfig(defaultName: string): Schema<InProcessConfig.Input, InProcessConfig> {
  return Schema.object({
    name: Schema.string().pattern(NAME_PATTERN).default(defaultName).description('Provider name that subagent tools bind to.'),
    maxSteps: count({ min: 1 }).description('Step limit of each child (default: the agent runtime\'s `maxSteps`).'),
    description: Schema.string().description('Appended to the description of tools bound to this provider.'),
    askParent: Schema.boolean().default(false).description('Give each child an ask tool: calling it parks the child on a question for its parent (the delegating tool\'s `questions` decides who answers). Parked, the child makes no model calls.'),
    askParentTool: Schema.string().pattern(NAME_PATTERN).default('ask_parent').description('Name of the ask tool the children get (with `askParent`). It shadows a registered tool of the same name for them.'),
    maxParkedMs: duration({ min: 1 }).default(DEFAULT_MAX_PARKED_MS).description('Milliseconds a child may wait parked on a question; then it ends as timeout at once (subagent/end, the journal, pending()) and its parent gets that result.'),
  })
}

/** The options checked as the config schema checks them (a caller of `createInProcessProvider` passes no schema). */
export function checkedInProcessOptions(options: InProcessProviderOptions): InProcessProviderOptions {
  const problem = (options.maxParkedMs === undefined ? undefined : durationProblem('maxParkedMs', options.maxParkedMs, { min: 1 }))
    ?? (options.maxSteps === undefined ? undefined : countProblem('maxSteps', options.maxSteps, { min: 1 }))
  if (problem) throw new SubagentError('INVALID_PROVIDER', `createInProcessProvider (${options.name}): ${problem}`)
  return options
}
