import { type Context as OtelContext, trace } from '@opentelemetry/api'
import { Context, Service } from 'cordis'
import { KeptWith, withoutCallerTracing } from '@cordis-subagents/shared'
import type { Agent } from '@cordis-subagents/agent'
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
  private readonly remote = new KeptWith<OtelContext>('remote trace parent')
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
    // The closures below run per run and per event: they close over plain locals, never `this`
    // (a cordis service is reached through its tracing proxy, which builds a shadow context per read).
    const remote = this.remote
    const environment = this.environment
    const runs: RunSpans = this.runs = new RunSpans({
      tracer,
      recording,
      content,
      flatAttributes: !!this.config.flatAttributes,
      defaultModel: () => agents.config.model,
      serverOf: (ref) => serverOf(agents, ref),
      parentOf: (agent): RunParent | undefined => parentOf(delegations, remote, environment, agent),
    })
    const delegations: DelegationSpans = this.delegations = new DelegationSpans(tracer, runs, content, recording)
    ctx.agents.observe(runs)
    ctx.inject(['subagents'], (ctx) => {
      ctx.subagents.traceDelegations(delegations.source)
      // Direct listeners, not `ctx.on`: a cordis listener pays cordis' caller tracing on every call.
      ctx.subagents.observe({
        'subagent/start': (info) => delegations.started(info),
        'subagent/end': (info, outcome) => delegations.ended(info, outcome),
        'subagent/start-failed': (failure) => delegations.failedToStart(failure.runId, failure.error),
      })
    })
    ctx.on('dispose', () => {
      runs.closeAll()
      delegations.closeAll()
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

}

/** Where calls of a model ref go, as its model says (`ChatModel.server`); nothing when it does not or the ref does not resolve. */
function serverOf(agents: Context['agents'], ref: string | undefined): { address: string; port?: number } | undefined {
  const resolved = agents.resolveModel(ref)
  if ('error' in resolved) return undefined
  const server = resolved.model.server
  if (!server || typeof server.address !== 'string' || !server.address) return undefined
  const port = server.port
  return Number.isInteger(port) && port! > 0 && port! < 65536 ? { address: server.address, port } : { address: server.address }
}

/** Where a run of `agent` hangs: its delegation's span, a remote trace it continues, or the environment's (a root). */
function parentOf(
  delegations: DelegationSpans, remote: KeptWith<OtelContext>, environment: OtelContext | undefined, agent: Agent,
): RunParent | undefined {
  const delegated = delegations.parentOf(agent)
  if (delegated) return delegated
  const continued = remote.get(agent)
  if (continued) return { context: continued }
  if (agent.parent) return undefined
  return environment ? { context: environment } : undefined
}
