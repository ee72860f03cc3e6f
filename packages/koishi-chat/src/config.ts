// The plugin's configuration: who may answer, what a chat run may start, and every bound.
import { Schema } from 'cordis'
import { duration } from '@cordis-subagents/shared'

/** Who may answer a question posted to a channel. */
export type AnswerBy = 'starter' | 'admins' | 'anyone'

export interface Config {
  /** The root agent `subagents.run` starts: a model ref and a system prompt (both optional). */
  agent: { model?: string, persona?: string, label?: string }
  answerBy: AnswerBy
  adminAuthority: number
  runAuthority: number
  timeout: number
  maxRuns: number
  maxRunsPerChannel: number
  maxRunsPerUser: number
  maxQuestionLength: number
  maxAnswerLength: number
  maxOutputLength: number
  keepEnded: number
}

/**
 * The options a loaded plugin takes without a reload (`ctx.accept`): each is read where it is used (a bound when it is
 * checked, `timeout` and `agent` when a run starts). `runAuthority` is not: Koishi fixes a command's authority when it
 * is registered, so a change of it reloads the plugin (which ends its live runs).
 */
export const LIVE_OPTIONS = [
  'agent', 'answerBy', 'adminAuthority', 'timeout', 'maxRuns', 'maxRunsPerChannel', 'maxRunsPerUser',
  'maxQuestionLength', 'maxAnswerLength', 'maxOutputLength', 'keepEnded',
] as const satisfies readonly (keyof Config)[]

export const Config: Schema<Config> = Schema.object({
  agent: Schema.object({
    model: Schema.string().description('Model ref of the root agent (`name` or `name:modelId`); default: the agent runtime\'s model.'),
    persona: Schema.string().role('textarea').description('System prompt of the root agent; default: the agent runtime\'s persona.'),
    label: Schema.string().description('Label of the root agent (its id prefix).'),
  }).default({} as never).description('The root agent `subagents.run` starts for a task.'),
  answerBy: Schema.union([
    Schema.const('starter').description('the user who started the run (and admins)'),
    Schema.const('admins').description('admins only (Koishi authority at least `adminAuthority`)'),
    Schema.const('anyone').description('anyone in the channel (by a reply to the question only)'),
  ]).default('starter').description('Who may answer a question a run of this channel asks.'),
  adminAuthority: Schema.natural().max(5).default(3).description('Koishi authority that makes a user an admin here (answers any question, cancels any run). Needs a database; without one nobody is an admin.'),
  runAuthority: Schema.natural().max(5).default(1).description('Koishi authority needed to start a run with `subagents.run`.'),
  timeout: duration().role('ms').default(60 * 60_000).description('Longest a chat run may live, parked time included (ms); then it is cancelled. 0 = no bound of ours (the providers\' parked bounds still hold).'),
  maxRuns: Schema.natural().min(1).max(1024).default(16).description('Chat runs live at once in this process (started here or bound by an integration).'),
  maxRunsPerChannel: Schema.natural().min(1).max(64).default(4).description('Chat runs live at once in one channel.'),
  maxRunsPerUser: Schema.natural().min(1).max(64).default(2).description('Chat runs one user (by platform and user id) has live at once, across channels; so one user who never answers cannot hold every `maxRuns` slot.'),
  maxQuestionLength: Schema.natural().min(64).max(16_384).default(1500).description('Longest question text posted to a channel (characters); more is cut with a marker.'),
  maxAnswerLength: Schema.natural().min(1).max(65_536).default(4000).description('Longest answer taken from a chat reply (characters); a longer one is refused, not cut.'),
  maxOutputLength: Schema.natural().min(64).max(65_536).default(2000).description('Longest final answer posted to a channel (characters); more is cut with a marker.'),
  keepEnded: Schema.natural().max(256).default(16).description('Ended runs kept for the `subagents` list (the newest, across channels).'),
}) as Schema<Config>
