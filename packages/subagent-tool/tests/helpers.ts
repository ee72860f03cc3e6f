import type { Context, ForkScope } from 'cordis'
import type { ToolExecContext, ToolResult, ToolUpdate } from '@cordis-subagents/tools'
import { type Agent, ScriptedModel, type ScriptedReply } from '@cordis-subagents/agent'
import type {
  Config as ServiceConfig, ProviderCapabilities, ProviderStartRequest,
} from '@cordis-subagents/subagents-service'
import { ALL_CAPABILITIES, FakeProvider } from '@cordis-subagents/subagents-service/testing'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import { deferred, tick, until, isSettled } from '../../../test/support/async.js'
import type { LogRecord } from '../../../test/support/logs.js'
import { startHost } from '../../../test/support/host.js'

export { deferred, tick, until, isSettled }

export { SubagentTool }

/** `fork.status` of a plugin whose apply (or config schema) threw: cordis `ScopeStatus.FAILED`. */
export const FAILED = 3


/** How many timers (`Timeout` resources) the process holds now. */
export function timerCount(): number {
  return process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length
}

export interface Harness {
  ctx: Context
  /** Every `internal/error` cordis reported. */
  errors: unknown[]
  /** Every record the loggers wrote (debug included), in order; not printed. */
  logs: LogRecord[]
  /** Records of the `subagent-tool` logger only. */
  toolLogs(type?: string): LogRecord[]
  stop(): Promise<void>
}

/** A started root context with the real `ctx.tools`, `ctx.agents` and `ctx.subagents`; logs captured. */
export async function setup(config: { subagents?: Partial<ServiceConfig> } = {}): Promise<Harness> {
  const host = await startHost({ subagents: config.subagents, captureLogs: true })
  return {
    ctx: host.ctx,
    errors: host.errors,
    logs: host.logs,
    toolLogs: (type) => host.logs.filter((record) => record.name === 'subagent-tool' && (!type || record.type === type)),
    stop: host.stop,
  }
}

/** Loads the subagent tool plugin (exactly the module the loader would load) and lets it settle. */
export async function loadTool(ctx: Context, config: Record<string, unknown>): Promise<ForkScope> {
  const fork = ctx.plugin(SubagentTool as any, config)
  await ctx.lifecycle.flush()
  return fork
}

export { NO_CAPABILITIES as NONE } from '@cordis-subagents/subagents-service/testing'

/**
 * The far side of a scripted provider: shared by every load of its plugin (so counts survive a
 * reload). It is the kit's `FakeProvider` (its own name and capabilities unused: the plugin's
 * config gives those); its runs leave settling on dispose to the service and report no partial
 * output when cancelled.
 */
export class ProviderControl extends FakeProvider {
  constructor() {
    super('control')
    this.runDefaults = { settleOnDispose: false, partialOutput: '' }
  }

  /** Every start, in order. */
  get starts(): ProviderStartRequest[] {
    return this.calls
  }
}

export interface ProviderConfig {
  name: string
  description?: string
  inheritsParentContext?: boolean
  capabilities?: Partial<ProviderCapabilities>
}

/**
 * A fresh provider plugin (never de-duplicated by cordis): it registers
 * `{ name, description?, capabilities, inheritsParentContext, start }` from its config, so
 * `fork.update(config)` reloads it with new properties. Its runs go to `control`.
 */
export function providerPlugin(control: ProviderControl) {
  return {
    name: 'test-provider',
    inject: ['subagents'],
    apply(ctx: Context, config: ProviderConfig) {
      ctx.subagents.register({
        name: config.name,
        ...config.description === undefined ? {} : { description: config.description },
        capabilities: { ...ALL_CAPABILITIES, ...config.capabilities },
        inheritsParentContext: config.inheritsParentContext ?? false,
        start: (request) => control.start(request),
      })
    },
  }
}

export async function loadProvider(ctx: Context, control: ProviderControl, config: ProviderConfig): Promise<ForkScope> {
  const fork = ctx.plugin(providerPlugin(control), config)
  await ctx.lifecycle.flush()
  return fork
}

/** A stand-in caller for direct `ctx.tools` calls where the parent agent does not matter. */
export function caller(depth = 0): ToolExecContext['agent'] {
  return { id: `parent-${depth}`, depth } as ToolExecContext['agent']
}

export interface CallOptions {
  signal?: AbortSignal
  agent?: ToolExecContext['agent'] | Agent
  onUpdate?: (update: ToolUpdate) => void
  name?: string
}

/** Calls the tool through the registry, as an agent's loop would. */
export function call(ctx: Context, input: unknown, options: CallOptions = {}): Promise<ToolResult> {
  return ctx.tools.view().execute({ name: options.name ?? 'subagent', input }, {
    signal: options.signal ?? new AbortController().signal,
    agent: options.agent ?? caller(),
    toolCallId: 'c1',
    ...options.onUpdate ? { onUpdate: options.onUpdate } : {},
  })
}

export const INPUT = { description: 'Summarise the README', prompt: 'Read README.md and summarise it in one line.' }

/** A real parent agent driven by a `ScriptedModel` (registered as model `scripted`). */
export function parentAgent(ctx: Context, script: ScriptedReply[]): { agent: Agent; model: ScriptedModel } {
  const model = new ScriptedModel(script)
  ctx.agents.registerModel('scripted', model)
  return { agent: ctx.agents.create({ model: 'scripted', label: 'parent' }), model }
}
