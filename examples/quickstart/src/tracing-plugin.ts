/**
 * The quick start's tracing as a plugin, for a process started from a config file (the ACP agent,
 * acp-agent.yml): starts tracing.ts (OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set, the JSON-lines
 * file when QUICKSTART_TRACE_FILE is) and loads the telemetry plugin on it. Neither set: nothing.
 * The exporter is flushed before the process exits (serve-acp's bin waits for it).
 */
import { type Context, Schema } from 'cordis'
import { holdExit } from '@cordis-subagents/serve-acp'
import { Config as TelemetryConfig } from '@cordis-subagents/telemetry'
import { startTracing, type Tracing } from './tracing.js'

export const name = 'quickstart-tracing'
export const inject = ['agents']

/** `service.name`, and the telemetry plugin's own options (`flatAttributes`, `captureContent`, …), passed to it as they are. */
export interface Config extends Omit<TelemetryConfig, 'tracerProvider'> {
  service: string
}

export const Config: Schema<Config> = Schema.intersect([
  Schema.object({
    service: Schema.string().required().description('`service.name` of the exported spans.'),
  }),
  TelemetryConfig,
]) as Schema<Config>

export function apply(ctx: Context, config: Config) {
  let tracing: Tracing | undefined
  let stopped = false
  ctx.effect(() => () => {
    stopped = true
    if (tracing) holdExit(tracing.shutdown())
  })
  ctx.scope.ensure(async () => {
    const started = await startTracing(config.service)
    if (!started) return
    if (stopped) return void holdExit(started.shutdown())
    tracing = started
    const { service: _service, ...telemetry } = config
    ctx.plugin((await import('@cordis-subagents/telemetry')).default, { ...telemetry, tracerProvider: started.provider })
  })
}
