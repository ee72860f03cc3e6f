import { type Context as OtelContext, trace } from '@opentelemetry/api'
import { Context, Service } from 'cordis'
import { type Agent, withoutCallerTracing } from '@cordis-subagents/agent'
import type { TraceContext } from '@cordis-subagents/subagents-service'
import { environmentParent, remoteParent } from './carrier.js'
import { Config, DEFAULTS } from './config.js'
import { ContentPolicy } from './content.js'
import { DelegationSpans } from './delegations.js'
import { recordingCheck } from './recording.js'
import { type RunParent, RunSpans } from './runs.js'

declare module 'cordis' {
  interface Context {
    telemetry: Telemetry
  }
}

const TRACER_NAME = '@cordis-subagents/telemetry'
const TRACER_VERSION = '0.1.0'

/**
 * `ctx.telemetry`: OpenTelemetry spans of every agent run of `ctx.agents` (`invoke_agent`, `chat`,
 * `execute_tool`) and every delegation of `ctx.subagents` (`subagent <provider>`), nested into one
 * trace per root run, continued across ACP by the W3C trace context the delegation carries.
 * Depends on `@opentelemetry/api` only: the host registers an SDK and exporter (or passes
 * `tracerProvider`); without one every span is a no-op.
 */
export class Telemetry extends Service<Config> {
  static inject = ['agents']
  static Config = Config

  private readonly runs: RunSpans
  private readonly delegations: DelegationSpans
  private readonly remote = new WeakMap<Agent, OtelContext>()
  private readonly environment?: OtelContext

  constructor(ctx: Context, config: Config = {}) {
    super(ctx, 'telemetry', true)
    this.config = { ...DEFAULTS, ...config }
    const provider = this.config.tracerProvider ?? trace.getTracerProvider()
    const tracer = provider.getTracer(TRACER_NAME, TRACER_VERSION)
    const recording = recordingCheck(provider)
    const content = new ContentPolicy(!!this.config.captureContent, this.config.maxContentLength ?? DEFAULTS.maxContentLength!)
    if (this.config.fromEnvironment) this.environment = environmentParent(process.env)
    // The runtime itself, not its caller-tracing proxy (a shadow context per read): its config is read on every model call.
    const agents = withoutCallerTracing(ctx.agents)
    this.runs = new RunSpans({
      tracer,
      recording,
      content,
      flatAttributes: !!this.config.flatAttributes,
      defaultModel: () => agents.config.model,
      parentOf: (agent) => this.parentOf(agent),
    })
    this.delegations = new DelegationSpans(tracer, this.runs, content, recording)
    ctx.agents.observe(this.runs)
    ctx.inject(['subagents'], (ctx) => {
      ctx.subagents.traceDelegations(this.delegations.source)
    })
    ctx.on('subagent/start', (info) => this.delegations.started(info))
    ctx.on('subagent/end', (info, outcome) => this.delegations.ended(info, outcome))
    ctx.on('subagent/start-failed', (failure) => this.delegations.failedToStart(failure.runId, failure.error))
    ctx.on('dispose', () => {
      this.runs.closeAll()
      this.delegations.closeAll()
    })
  }

  /**
   * Makes `agent`'s next runs continue a trace that began elsewhere (an ACP agent passes the
   * `_meta` of session/prompt): its `invoke_agent` spans become children of that remote span.
   * `undefined` or a malformed context clears it. Returns whether a context was taken.
   */
  continueTrace(agent: Agent, context: TraceContext | undefined): boolean {
    const parent = remoteParent(context)
    if (parent) this.remote.set(agent, parent)
    else this.remote.delete(agent)
    return !!parent
  }

  private parentOf(agent: Agent): RunParent | undefined {
    const delegated = this.delegations.parentOf(agent)
    if (delegated) return delegated
    const remote = this.remote.get(agent)
    if (remote) return { context: remote }
    if (agent.parent) return undefined
    return this.environment ? { context: this.environment } : undefined
  }
}
