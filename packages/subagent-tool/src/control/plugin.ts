import { Context, Schema } from 'cordis'
import { count, duration, NAME_PATTERN, withoutCallerTracing } from '@cordis-subagents/shared'
import type { InFlight } from '../call-types.js'
import { controlVerbs, type VerbNames } from '../verb-names.js'
import { buildVerbs } from './verbs.js'
import { SubagentToolError } from '../errors.js'

export const name = 'subagent-control'
export const reusable = true
export const inject = ['tools', 'subagents']

export interface Config {
  /**
   * The verbs are named `<prefix>_wait`, `<prefix>_status`, `<prefix>_cancel`, `<prefix>_send`, `<prefix>_reply`,
   * `<prefix>_result`, `<prefix>_continue`.
   */
  prefix: string
  waitTimeout: number
  maxWaitTimeout: number
  cancelGrace: number
  startWait: number
  replyTimeout: number
  /** Most bytes of a child's output one `<prefix>_result` call returns. */
  pageBytes: number
  /** Whether agents at depth >= 1 (children) get the verbs too. false: only depth-0 agents have them. */
  nested: boolean
}

/** The longest a prefix can be so that `<prefix>_continue` is still a valid tool name (64 characters). */
const MAX_PREFIX = 64 - '_continue'.length

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  prefix: Schema.string().pattern(NAME_PATTERN).max(MAX_PREFIX).default('subagent').description('The tools are `<prefix>_wait`, `<prefix>_status`, `<prefix>_cancel`, `<prefix>_send`, `<prefix>_reply`, `<prefix>_result` and `<prefix>_continue`.'),
  waitTimeout: duration({ min: 1000 }).default(60_000).description('How long a wait call waits when the model names no timeout (ms).'),
  maxWaitTimeout: duration({ min: 1000 }).default(600_000).description('Longest wait the model may ask for (ms).'),
  cancelGrace: duration().default(5_000).description('How long a cancel call waits for the child to stop, to return its last result (ms).'),
  nested: Schema.boolean().default(false).description('Children get the verbs too. Set it with a `nested: true` background subagent tool, so children that start background children can wait for, steer and cancel them. Default false: only agents at depth 0 have the verbs (a child without background children has no handles to act on).'),
  replyTimeout: duration().default(30 * 60_000).description('How long a reply or continue call waits for the child\'s next result before it cancels the child (ms; 0 = no limit). Like the subagent tool\'s timeout, it runs only while the child works.'),
  pageBytes: count({ min: 256, max: 1024 * 1024 }).default(32 * 1024).description('Most bytes of a child\'s output one `<prefix>_result` call returns (a page; the model reads on from the offset it names). Never more than the caller\'s tool result cap allows.'),
  startWait: duration().default(10_000).description('How long a send call waits for a child that is still starting (queued for a slot, or its provider setting up) before it gives up (ms).'),
})

export function apply(ctx: Context, config: Config) {
  if (config.waitTimeout > config.maxWaitTimeout) {
    throw new SubagentToolError('INVALID_CONFIG', `subagent-control: config.waitTimeout (${config.waitTimeout}) is above `
      + `config.maxWaitTimeout (${config.maxWaitTimeout}); lower it or raise the maximum.`)
  }
  const names: VerbNames = {
    wait: `${config.prefix}_wait`,
    status: `${config.prefix}_status`,
    cancel: `${config.prefix}_cancel`,
    send: `${config.prefix}_send`,
    reply: `${config.prefix}_reply`,
    result: `${config.prefix}_result`,
    continue: `${config.prefix}_continue`,
  }
  const subagents = withoutCallerTracing(ctx.subagents)
  const { waitTimeout, maxWaitTimeout, cancelGrace, startWait, replyTimeout, pageBytes } = config
  const replies = new Set<InFlight>()
  const options = { names, waitTimeout, maxWaitTimeout, cancelGrace, startWait, replyTimeout, replies, pageBytes }
  for (const tool of buildVerbs(subagents, options)) {
    // Not nested: agents at depth >= 1 neither list the verbs nor can call them (an unknown tool).
    ctx.tools.register(config.nested ? tool : { ...tool, maxCallerDepth: 0 })
  }
  // The delegation tool's wording names these verbs (a question, a cut output, a background start).
  ctx.effect(() => controlVerbs(subagents).use(names))
  ctx.on('dispose', () => {
    for (const call of [...replies]) call.cancel('unload')
  })
}
