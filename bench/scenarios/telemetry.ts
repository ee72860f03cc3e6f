import { BatchSpanProcessor, BasicTracerProvider, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base'
import { withoutCallerTracing } from '@cordis-subagents/shared'
import type { AgentRuntime } from '@cordis-subagents/agent'
import Telemetry from '@cordis-subagents/telemetry'
import { delegationModel, host, interleave, type Stats } from '../lib.js'

/**
 * What tracing costs per delegation (parent step → child step → parent step, subagent → spawn):
 * the telemetry plugin not loaded; loaded without an SDK (the API's no-op tracer); loaded with the
 * SDK recording every span through a BatchSpanProcessor into an exporter that only counts them
 * (the export itself, network or disk, is the host's choice and not measured). By the process'
 * CPU time, interleaved: each round is a pair for the paired ratios of the target.
 */
export interface TelemetryResult {
  stats: Record<string, Stats>
  /** Spans the recording system exported per delegation (7: invoke_agent ×2, chat ×3, execute_tool, subagent). */
  spansPerDelegation: number
}

export const TELEMETRY_SYSTEMS = {
  off: 'telemetry not loaded',
  /** An identical second host without telemetry: the A/A row, whose paired spread is what this machine can resolve. */
  twin: 'telemetry not loaded (a second, identical host: A/A)',
  noop: 'telemetry loaded, no SDK (no-op tracer)',
  recording: 'telemetry loaded, SDK recording (BatchSpanProcessor)',
} as const

export async function telemetry(options: { rounds: number; batch: number; warmup: number }): Promise<TelemetryResult> {
  let exported = 0
  const exporter: SpanExporter = {
    export(spans: ReadableSpan[], done) {
      exported += spans.length
      done({ code: 0 })
    },
    shutdown: () => Promise.resolve(),
  }
  const provider = new BasicTracerProvider({
    spanProcessors: [new BatchSpanProcessor(exporter, { maxQueueSize: 65_536, maxExportBatchSize: 4096, scheduledDelayMillis: 50 })],
  })
  const off = await host({ model: delegationModel('subagent') })
  const twin = await host({ model: delegationModel('subagent') })
  const noop = await host({ model: delegationModel('subagent') })
  const recording = await host({ model: delegationModel('subagent') })
  noop.ctx.plugin(Telemetry)
  recording.ctx.plugin(Telemetry, { tracerProvider: provider })
  await noop.ctx.lifecycle.flush()
  await recording.ctx.lifecycle.flush()
  let recorded = 0
  const system = (agents: AgentRuntime, count = false) => async () => {
    const agent = agents.create({})
    const result = await agent.run('do the task')
    if (result.text !== 'parent final answer') throw new Error(`telemetry bench: ${JSON.stringify(result)}`)
    await agent.dispose()
    if (count) recorded++
  }
  try {
    const stats = await interleave({
      [TELEMETRY_SYSTEMS.off]: system(withoutCallerTracing(off.ctx.agents)),
      [TELEMETRY_SYSTEMS.twin]: system(withoutCallerTracing(twin.ctx.agents)),
      [TELEMETRY_SYSTEMS.noop]: system(withoutCallerTracing(noop.ctx.agents)),
      [TELEMETRY_SYSTEMS.recording]: system(withoutCallerTracing(recording.ctx.agents), true),
    }, { ...options, clock: 'CPU' })
    await provider.forceFlush()
    return { stats, spansPerDelegation: exported / recorded }
  } finally {
    await off.stop()
    await twin.stop()
    await noop.stop()
    await recording.stop()
    await provider.shutdown()
  }
}
