/**
 * OpenTelemetry for a quick-start process (the CLI's app, the ACP agent). The SDK is loaded only
 * when a destination is configured:
 * - `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`): spans go to any OTLP
 *   collector (Jaeger, Tempo, Honeycomb, ...) over HTTP, batched, flushed by `shutdown()`;
 * - `QUICKSTART_TRACE_FILE`: every span is appended to that file as one JSON line when it ends
 *   (tests read it to join a child process' spans with the parent's by trace id).
 * Neither set: no SDK, no provider; the telemetry plugin then records nothing.
 */
import { appendFileSync } from 'node:fs'
import { trace, type TracerProvider } from '@opentelemetry/api'
import type { ReadableSpan, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base'

export interface Tracing {
  provider: TracerProvider
  /** Exports what is still buffered and stops the exporters (call before the process exits). */
  shutdown(): Promise<void>
}

/** One exported span as a JSON line of `QUICKSTART_TRACE_FILE`. */
export interface SpanLine {
  name: string
  kind: number
  traceId: string
  spanId: string
  parentSpanId?: string
  attributes: Record<string, unknown>
  status: { code: number; message?: string }
  service: string
}

export async function startTracing(serviceName: string, env: NodeJS.ProcessEnv = process.env): Promise<Tracing | undefined> {
  const otlp = !!(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
  const file = env.QUICKSTART_TRACE_FILE
  if (!otlp && !file) return undefined
  const [{ BasicTracerProvider, BatchSpanProcessor, SimpleSpanProcessor }, { resourceFromAttributes }] = await Promise.all([
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/resources'),
  ])
  const service = env.OTEL_SERVICE_NAME || serviceName
  const spanProcessors: SpanProcessor[] = []
  if (otlp) {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http')
    spanProcessors.push(new BatchSpanProcessor(new OTLPTraceExporter()))
  }
  if (file) spanProcessors.push(new SimpleSpanProcessor(fileExporter(file, service)))
  const provider = new BasicTracerProvider({ resource: resourceFromAttributes({ 'service.name': service }), spanProcessors })
  return { provider, shutdown: () => provider.shutdown().catch(() => {}) }
}

/** `startTracing`, registered as the global tracer provider (what the telemetry plugin uses by default). */
export async function startGlobalTracing(serviceName: string, env: NodeJS.ProcessEnv = process.env): Promise<Tracing | undefined> {
  const tracing = await startTracing(serviceName, env)
  if (tracing) trace.setGlobalTracerProvider(tracing.provider)
  return tracing
}

function fileExporter(file: string, service: string): SpanExporter {
  return {
    export(spans: ReadableSpan[], done) {
      try {
        appendFileSync(file, spans.map((span) => `${JSON.stringify(spanLine(span, service))}\n`).join(''))
        done({ code: 0 })
      } catch (error) {
        done({ code: 1, error: error as Error })
      }
    },
    shutdown: () => Promise.resolve(),
  }
}

function spanLine(span: ReadableSpan, service: string): SpanLine {
  const { traceId, spanId } = span.spanContext()
  return {
    name: span.name,
    kind: span.kind,
    traceId,
    spanId,
    ...span.parentSpanContext ? { parentSpanId: span.parentSpanContext.spanId } : {},
    attributes: { ...span.attributes },
    status: { code: span.status.code, ...span.status.message ? { message: span.status.message } : {} },
    service,
  }
}
