import { Context, Schema } from 'cordis'
import { count, DeadlineQueue, duration, missingCapability, NAME_PATTERN, toolFilterProblem } from '@cordis-subagents/shared'
import { z } from 'zod'
import type { SubagentProvider, TurnEndPolicy } from '@cordis-subagents/subagents-service'
import { withoutCallerTracing } from '@cordis-subagents/shared'
import { runDelegation, type DelegateOptions, type InFlight } from './call.js'
import { startInBackground } from './background.js'
import { describePrompt, describeTool, LABEL_DESCRIPTION } from './wording.js'

export { describeTool, describePrompt } from './wording.js'
export { capOutput } from './result.js'
export { startedText } from './background.js'

export const name = 'subagent-tool'
export const reusable = true
export const inject = ['tools', 'subagents']

/** Everything a delegation needs (see `DelegateOptions`), plus the name the model sees. */
export interface Config extends DelegateOptions {
  toolName: string
  /** `sync`: the call returns the child's answer. `background`: it returns a handle at once; the answer comes later. */
  mode: 'sync' | 'background'
  /** In background mode: whether the parent's turn waits for live children before it ends. */
  onTurnEnd: TurnEndPolicy
  /** Whether agents at depth >= 1 (children) see the tool too. false: only depth-0 agents have it. */
  nested: boolean
}

// Optional keys default to `undefined` explicitly: schemastery would otherwise turn an omitted
// object into `{}` and an omitted toolFilter into `{ allow: [] }`, which hides every tool.
const unset = undefined as never
/** A blank persona or model would pass here and fail every call; reject it at load instead. */
const NOT_BLANK = /\S/


/**
 * 64 KiB, about 16k tokens: a complete report from a child, and several of them fit a parent's
 * context window. 1 MiB (the old default) was about 260k tokens from one delegation.
 */
export const DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024
/** Room under ctx.tools' result cap for the truncation note, a headline and the diagnostic (≤ 4 KiB). */
const NOTE_ROOM_BYTES = 8 * 1024

export const Config: Schema<Partial<Config> & Pick<Config, 'provider'>, Config> = Schema.object({
  provider: Schema.string().pattern(NAME_PATTERN).required().description('Name of the subagent provider this tool delegates to (e.g. `spawn`, `fork`, `acp`).'),
  toolName: Schema.string().pattern(NAME_PATTERN).default('subagent').description('Name of the tool the model sees. Must be unique across the app.'),
  agentOptions: Schema.object({
    model: Schema.string().pattern(NOT_BLANK).description('Model ref for the child (`name` or `name:modelId`). Default: the parent\'s model.'),
  }).default(unset).description('Options for the child agent.'),
  persona: Schema.string().pattern(NOT_BLANK).role('textarea').description('System prompt of the child. Default: the provider\'s.'),
  toolFilter: Schema.object({
    allow: Schema.array(String).default(unset).description('Only these tools (of the parent\'s) are visible to the child.'),
    deny: Schema.array(String).default(unset).description('These tools are hidden from the child.'),
  }).default(unset).description('Narrows the tools the child can use. It can never see more than its parent.'),
  maxDepth: count().description('Deepest allowed child depth (root agents are depth 0). Lowers the subagents service\'s maxDepth (default 3), never raises it.'),
  budget: Schema.object({
    maxSteps: count().description('Model calls of each child and everything below it.'),
    maxTokens: count().description('Tokens (input + output) of each child and everything below it.'),
    maxToolCalls: count().description('Tool calls of each child and everything below it.'),
    maxWallMs: count().description('Wall time of each child, its children included (ms). Unlike `timeout`, it is a budget its children share.'),
    maxChildren: count().description('Delegations below each child.'),
    maxConcurrent: count({ min: 1 }).description('Children of one parent live at once through this tool (lowers the service\'s maxConcurrentPerParent).'),
    maxDepth: count().description('Deepest depth below each child.'),
  }).default(unset).description('Limits of each child\'s tree, carved from what the calling agent has left (a child never gets more than its parent has left).'),
  // Node fires a timer longer than 2^31-1 ms at once, so a larger timeout would cancel every call.
  timeout: duration().default(30 * 60_000).description('Milliseconds before a delegation is cancelled; 0 means no limit (at most 2147483647, about 24.8 days).'),
  resume: Schema.boolean().description('Ask the provider to continue this parent\'s earlier child session instead of a fresh child (provider-acp with `resume: request`; `false` opts out of `resume: per-parent`). Providers that cannot resume ignore it.'),
  maxOutputBytes: count({ min: 1 }).default(DEFAULT_MAX_OUTPUT_BYTES).description('Largest child output (UTF-8 bytes) returned to the parent; longer output is truncated with a note. Default 64 KiB (about 16k tokens). Never more than ctx.tools\' result cap allows, less room for the notes.'),
  mode: Schema.union(['sync', 'background']).default('sync').description('`sync`: the call returns the child\'s answer. `background`: the call returns at once with a handle (`bg-1`, …); the answer is delivered later (see subagent-control for the wait / status / cancel / send tools).'),
  nested: Schema.boolean().default(false).description('Children see this tool too, so they can delegate further (within `maxDepth` and the service\'s limits). Default false: only agents at depth 0 have it, and a child neither lists it nor can call it.'),
  onTurnEnd: Schema.union(['wait', 'end']).default('wait').description('Background mode: when the parent would end its turn with children still running, `wait` keeps the turn open until their results are delivered; `end` lets it end (results arrive at its next turn).'),
})

export function apply(ctx: Context, config: Config) {
  checkToolFilter(config.toolFilter)
  const logger = ctx.logger(`subagent-tool`)
  // ctx.tools caps every tool result: keep the child's output (and our truncation note, headline
  // and diagnostic) under it, so the note that says what was cut is never cut itself.
  const registryCap = ctx.tools.maxResultBytes
  if (Number.isSafeInteger(registryCap) && config.maxOutputBytes > registryCap - NOTE_ROOM_BYTES) {
    const lowered = Math.max(1, registryCap - NOTE_ROOM_BYTES)
    logger.info('tool "%s": maxOutputBytes %d lowered to %d (ctx.tools caps a tool result at %d bytes)', config.toolName, config.maxOutputBytes, lowered, registryCap)
    config = { ...config, maxOutputBytes: lowered }
  }
  // Claim the name first: a duplicate fails this plugin at load, whether or not providers exist.
  const reservation = ctx.tools.reserve(config.toolName)
  const inFlight = new Set<InFlight>()
  // Every call of this load has the same timeout: one queue, one timer, whatever the fan-out.
  const deadlines = config.timeout > 0 ? new DeadlineQueue(config.timeout) : undefined
  const subagents = withoutCallerTracing(ctx.subagents)
  let unmount: (() => void) | undefined
  let unloaded = false

  const mount = (provider: SubagentProvider) => {
    unmount?.()
    unmount = undefined
    const missing = missingOption(provider, config)
    if (missing) {
      logger.warn('tool "%s" not mounted: provider "%s" does not support %s', config.toolName, provider.name, missing)
      return
    }
    unmount = reservation.register({
      name: config.toolName,
      description: describeTool(provider, config.mode === 'background'),
      input: inputSchema(provider.inheritsParentContext),
      // Not nested: agents at depth >= 1 (children, and roots a parent elsewhere started) do not see it.
      ...config.nested ? {} : { maxCallerDepth: 0 },
      execute: (input, exec) => {
        // A call the registry looked up just before the unload must not start a run nobody owns.
        if (unloaded) return { isError: true, content: 'Subagent not started: the subagent tool was unloaded.' }
        if (config.mode === 'background') return startInBackground(subagents, config, input, exec, inFlight, deadlines)
        return runDelegation(subagents, config, input, exec, inFlight, deadlines)
      },
    })
    logger.debug('tool "%s" mounted on provider "%s"', config.toolName, provider.name)
  }

  // Listen first, then look: a provider that appears in between is not missed.
  ctx.on('subagent/provider-added', (provider) => {
    if (provider.name === config.provider) mount(provider)
  })
  ctx.on('subagent/provider-removed', (removed) => {
    if (removed !== config.provider || !unmount) return
    unmount()
    unmount = undefined
    // Debug, like the mount line: a provider reload is routine, and an info line per reload cost a third of a remount.
    logger.debug('tool "%s" unregistered: provider "%s" was removed; it returns when the provider does', config.toolName, removed)
  })
  const present = ctx.subagents.get(config.provider)
  if (present) mount(present)
  else logger.info('tool "%s" waits for provider "%s" (registered: %s)', config.toolName, config.provider, ctx.subagents.list().map((p) => p.name).join(', ') || 'none')

  ctx.on('dispose', () => {
    unloaded = true
    for (const run of [...inFlight]) run.cancel('unload')
  })
}

function buildInput(inheritsParentContext: boolean) {
  // Strict: a misspelt or extra field is reported to the model instead of silently dropped.
  return z.strictObject({
    description: z.string().trim().min(1, 'The description must not be empty.').max(120, 'The description must be at most 120 characters.').describe(LABEL_DESCRIPTION),
    prompt: z.string().min(1, { message: 'The prompt must not be empty.', abort: true })
      .refine((text) => text.trim().length > 0, 'The prompt must not be only whitespace.').describe(describePrompt({ inheritsParentContext })),
  })
}

const inputSchemas = new Map<boolean, ReturnType<typeof buildInput>>()

/** The model-facing input; one schema object per wording, so remounts reuse its JSON Schema. */
function inputSchema(inheritsParentContext: boolean) {
  let schema = inputSchemas.get(inheritsParentContext)
  if (!schema) inputSchemas.set(inheritsParentContext, schema = buildInput(inheritsParentContext))
  return schema
}

function checkToolFilter(filter: Config['toolFilter']) {
  if (!filter) return
  const problem = toolFilterProblem(filter, 'config.toolFilter', true)
  if (problem) throw new Error(`subagent-tool: ${problem}`)
  // A deny list that is empty hides nothing either: the same mistake as `{}`.
  if (filter.allow === undefined && !filter.deny?.length) {
    throw new Error('subagent-tool: config.toolFilter is empty. List tools under `allow` and/or `deny`, or remove `toolFilter` to give the child all of the parent\'s tools.')
  }
}

function missingOption(provider: SubagentProvider, config: Config): string | undefined {
  const missing = missingCapability(provider.capabilities, config)
  return missing && `\`${missing.option}\``
}
