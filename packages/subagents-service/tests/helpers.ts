import { Context } from 'cordis'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime, { type Agent } from '@cordis-subagents/agent'
import SubagentService, {
  type Config, type ProviderCapabilities, type ProviderStartRequest, type SubagentProvider,
  type SubagentRequest, type SubagentResult, type SubagentRun,
} from '@cordis-subagents/subagents-service'
import { type Deferred, deferred, tick, isSettled } from '../../../test/support/async.js'
import { captureLogs } from '../../../test/support/logs.js'

export { type Deferred, deferred, tick, isSettled }

export const FAILED = 3


export interface Harness {
  ctx: Context
  /** Every `internal/error` cordis reported. */
  errors: unknown[]
  /** Every warning the `subagents` logger wrote. */
  warnings: string[]
  /** A root agent (depth from the runtime config, default 0). */
  root: Agent
  stop(): Promise<void>
}

/**
 * A started root context with the real `ctx.tools`, `ctx.agents` and `ctx.subagents`. The logger
 * output is captured (not printed) until `stop()`.
 */
export async function setup(config: Partial<Config> = {}, agents: AgentRuntime.Config = {}): Promise<Harness> {
  const logs = captureLogs()
  const ctx = new Context()
  const errors: unknown[] = []
  ctx.on('internal/error', (error) => { errors.push(error) })
  ctx.plugin(ToolRegistry)
  ctx.plugin(AgentRuntime, agents)
  ctx.plugin(SubagentService, config)
  await ctx.start()
  await ctx.lifecycle.flush()
  const root = ctx.agents.create({ label: 'root' })
  let stopped = false
  return {
    ctx,
    errors,
    get warnings() {
      return logs.records.filter((r) => r.name === 'subagents' && r.type === 'warn').map((r) => r.content)
    },
    root,
    async stop() {
      if (stopped) return
      stopped = true
      await ctx.stop()
      await tick()
      logs.restore()
    },
  }
}

export const ALL: ProviderCapabilities = { persona: true, toolFilter: true, depthLimit: true }
export const NONE: ProviderCapabilities = { persona: false, toolFilter: false, depthLimit: false }

/** A run whose result, cancel and dispose the test controls and observes. */
export class ScriptedRun {
  readonly outcome = deferred<SubagentResult>()
  readonly cancels: (string | undefined)[] = []
  disposeCalls = 0
  /** When set, dispose() waits for it. */
  disposeGate?: Deferred<void>
  /** When set, dispose() rejects with it. */
  disposeError?: unknown
  /** When true (default), cancel() settles the result as `aborted`. */
  settleOnCancel = true
  /** When true (default), dispose() settles an unsettled result as `aborted`. */
  settleOnDispose = true
  readonly run: SubagentRun

  constructor(readonly request: ProviderStartRequest, childId?: string) {
    this.run = {
      id: request.runId,
      ...childId === undefined ? {} : { childId },
      result: this.outcome.promise,
      cancel: (reason) => {
        this.cancels.push(reason)
        if (this.settleOnCancel && !this.outcome.settled) {
          this.outcome.resolve({ stopReason: 'aborted', output: 'partial', diagnostic: `cancelled: ${reason}` })
        }
      },
      dispose: async () => {
        this.disposeCalls++
        if (this.disposeGate) await this.disposeGate.promise
        if (this.settleOnDispose && !this.outcome.settled) {
          this.outcome.resolve({ stopReason: 'aborted', output: '', diagnostic: 'disposed' })
        }
        if (this.disposeError !== undefined) throw this.disposeError
      },
    }
  }

  complete(output = 'done', extra: Partial<SubagentResult> = {}) {
    this.outcome.resolve({ stopReason: 'completed', output, ...extra })
  }

  update(kind: 'text' | 'step' | 'status', text?: string) {
    this.request.onUpdate!({ kind, ...text === undefined ? {} : { text } })
  }
}

/** A provider whose starts the test controls: every call is recorded; runs are ScriptedRuns. */
export class ScriptedProvider implements SubagentProvider {
  description?: string
  capabilities: ProviderCapabilities
  inheritsParentContext = false
  readonly calls: ProviderStartRequest[] = []
  readonly runs: ScriptedRun[] = []
  /** When set, start() waits for it before handing over. */
  hold?: Deferred<void>
  /** When set, start() rejects with it (after `hold`). */
  startError?: unknown
  /** When set, start() fulfils with this instead of a ScriptedRun. */
  fakeRun?: unknown
  /** Called with each new run before it is handed over (e.g. to settle it early). */
  onRun?: (run: ScriptedRun) => void

  constructor(readonly name: string, capabilities: ProviderCapabilities = ALL) {
    this.capabilities = { ...capabilities }
  }

  start = async (request: ProviderStartRequest): Promise<SubagentRun> => {
    this.calls.push(request)
    if (this.hold) await this.hold.promise
    if (this.startError !== undefined) throw this.startError
    if (this.fakeRun !== undefined) return this.fakeRun as SubagentRun
    const run = new ScriptedRun(request, `child-${this.calls.length}`)
    this.runs.push(run)
    this.onRun?.(run)
    return run.run
  }

  get last(): ScriptedRun {
    return this.runs[this.runs.length - 1]
  }
}

/** A fresh plugin (never de-duplicated by cordis) that registers `provider` in its own scope. */
export function providerPlugin(provider: SubagentProvider) {
  return {
    name: `provider-${provider.name}`,
    inject: ['subagents'],
    apply(ctx: Context) {
      ctx.subagents.register(provider)
    },
  }
}

export function request(parent: Agent, overrides: Partial<SubagentRequest> = {}): SubagentRequest {
  return {
    prompt: 'Summarise the file.',
    parent,
    signal: new AbortController().signal,
    ...overrides,
  }
}

/** Records the service's events in order, as compact strings plus their arguments. */
export function recordEvents(ctx: Context) {
  const log: string[] = []
  const args: unknown[][] = []
  ctx.on('subagent/provider-added', (provider) => { log.push(`added:${provider.name}`); args.push([provider]) })
  ctx.on('subagent/provider-removed', (name) => { log.push(`removed:${name}`); args.push([name]) })
  ctx.on('subagent/start', (info) => { log.push(`start:${info.runId}`); args.push([info]) })
  ctx.on('subagent/update', (info, update) => { log.push(`update:${info.runId}:${update.text ?? update.kind}`); args.push([info, update]) })
  ctx.on('subagent/end', (info, result) => { log.push(`end:${info.runId}:${result.stopReason}`); args.push([info, result]) })
  return { log, args }
}

export async function rejection(promise: Promise<unknown>): Promise<any> {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected the promise to reject, but it fulfilled')
}
