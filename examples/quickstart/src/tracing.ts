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
  /** Exports what is buffered now (the exporters stay up). */
  flush(): Promise<void>
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

/** Where export failures are reported by default: one line on stderr, like the app's warnings. */
const warnOnStderr = (message: string): void => void process.stderr.write(`[W] tracing ${message}\n`)

export async function startTracing(
  serviceName: string,
  env: NodeJS.ProcessEnv = process.env,
  warn: (message: string) => void = warnOnStderr,
): Promise<Tracing | undefined> {
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
    const [{ OTLPTraceExporter }, { warnOnExportFailure }] = await Promise.all([
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@cordis-subagents/telemetry'),
    ])
    const url = otlpTracesUrl(env)
    const headers = otlpHeaders(env)
    // The SDK reports a refused batch only through `diag` (silent by default): say so, once per kind.
    const timeout = Number(env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT || env.OTEL_EXPORTER_OTLP_TIMEOUT) || undefined
    const otlpExporter = new OTLPTraceExporter({ url, headers, ...timeout ? { timeoutMillis: timeout } : {} })
    const exporter = warnOnExportFailure(otlpExporter, { endpoint: url, warn, secrets: Object.values(headers) })
    spanProcessors.push(new BatchSpanProcessor(exporter as SpanExporter))
  }
  if (file) spanProcessors.push(new SimpleSpanProcessor(fileExporter(file, service)))
  const provider = new BasicTracerProvider({ resource: resourceFromAttributes({ 'service.name': service }), spanProcessors })
  return { provider, flush: () => provider.forceFlush().catch(() => {}), shutdown: () => provider.shutdown().catch(() => {}) }
}

/** `startTracing`, registered as the global tracer provider (what the telemetry plugin uses by default). */
export async function startGlobalTracing(serviceName: string, env: NodeJS.ProcessEnv = process.env): Promise<Tracing | undefined> {
  const tracing = await startTracing(serviceName, env)
  if (tracing) trace.setGlobalTracerProvider(tracing.provider)
  return tracing
}

/** The traces URL the OTLP/HTTP exporter posts to, per the OpenTelemetry environment variables. */
function otlpTracesUrl(env: NodeJS.ProcessEnv): string {
  if (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
  return `${env.OTEL_EXPORTER_OTLP_ENDPOINT!.replace(/\/+$/, '')}/v1/traces`
}

/** `OTEL_EXPORTER_OTLP_HEADERS` then `…_TRACES_HEADERS` (`key=value,…`, values URL-encoded). */
function otlpHeaders(env: NodeJS.ProcessEnv): Record<string, string> {
  const headers: Record<string, string> = {}
  for (const list of [env.OTEL_EXPORTER_OTLP_HEADERS, env.OTEL_EXPORTER_OTLP_TRACES_HEADERS]) {
    for (const pair of (list ?? '').split(',')) {
      const at = pair.indexOf('=')
      if (at <= 0) continue
      try {
        headers[decodeURIComponent(pair.slice(0, at).trim())] = decodeURIComponent(pair.slice(at + 1).trim())
      } catch {
        // a malformed escape: the SDK would drop the pair too
      }
    }
  }
  return headers
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
