/**
 * A span exporter that says when its exports fail. The OpenTelemetry SDK reports a failed batch
 * only through `diag`, which is silent unless a host installs a diag logger, so a collector that
 * refuses every batch (HTTP 500 on array attributes, a wrong port) goes unnoticed. This wrapper
 * warns once per failure kind (an HTTP status, a network error code), naming the endpoint and what
 * to do; never a header's value (the response text is scrubbed of the configured secrets).
 */
import { capForRedaction, EXPORT_FAILED, Redactor } from '@cordis-subagents/shared'

/** What a span exporter's `export` reports (the SDK's `ExportResult`: code 0 = success). */
export interface ExportOutcome {
  code: number
  error?: Error
}

/** The part of the SDK's `SpanExporter` the wrapper needs (structural, so this package keeps no SDK dependency). */
export interface SpanExporterLike<Span> {
  export(spans: Span[], done: (result: ExportOutcome) => void): void
  shutdown(): Promise<void>
  forceFlush?(): Promise<void>
}

export interface ExportFailureOptions {
  /** Where the exporter sends spans (shown in the warning). */
  endpoint: string
  /** Receives each warning (a logger's `warn`). */
  warn(message: string): void
  /** Values never to show (the exporter's header values, e.g. a collector's API key). */
  secrets?: Iterable<string>
}

/** How much of a collector's response body a warning quotes. */
const BODY_CHARS = 300
/** Distinct failure kinds warned about at most (a collector cycling through statuses cannot flood the log). */
const MAX_KINDS = 16

/** `exporter`, with one warning per failure kind (see the module comment). Success and results pass through unchanged. */
export function warnOnExportFailure<Span>(exporter: SpanExporterLike<Span>, options: ExportFailureOptions): SpanExporterLike<Span> {
  const warned = new Set<string>()
  const redactor = new Redactor(options.secrets ?? [])
  const report = (spans: number, outcome: ExportOutcome) => {
    const kind = failureKind(outcome.error)
    if (warned.has(kind) || warned.size >= MAX_KINDS) return
    warned.add(kind)
    options.warn(exportFailure(redactor, options.endpoint, kind, spans, outcome.error))
  }
  const wrapped: SpanExporterLike<Span> = {
    export(spans, done) {
      exporter.export(spans, (outcome) => {
        if (outcome.code !== 0) {
          try {
            report(spans.length, outcome)
          } catch {
            // a throwing logger must not lose the SDK's callback
          }
        }
        done(outcome)
      })
    },
    shutdown: () => exporter.shutdown(),
  }
  if (exporter.forceFlush) wrapped.forceFlush = () => exporter.forceFlush!()
  return wrapped
}

/** `HTTP 500`, `ECONNREFUSED`, or `error` when the failure names nothing more stable. */
export function failureKind(error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code
  if (typeof code === 'number' && code >= 100 && code <= 599) return `HTTP ${code}`
  if (typeof code === 'string' && /^[A-Z][A-Z0-9_]{1,40}$/.test(code)) return code
  return 'error'
}

/** The warning; only what came from elsewhere (the endpoint, the receiver's answer) is scrubbed, so the advice stays readable. */
function exportFailure(redactor: Redactor, endpoint: string, kind: string, spans: number, error: Error | undefined): string {
  const data = (error as { data?: unknown } | undefined)?.data
  const body = typeof data === 'string' ? data.trim() : ''
  const text = body || error?.message || ''
  const said = text ? redactor.redact(capForRedaction(text.replace(/\s+/g, ' '), BODY_CHARS)) : ''
  // The code lets a parent process pick this line out of our stderr and repeat it (shared's ChildWarnings).
  return `${EXPORT_FAILED}: OTLP export to ${redactor.redact(endpoint)} failed with ${kind}${said ? (body ? `; it answered: ${said}` : ` (${said})`) : ''}. `
    + `${spans} span(s) of this batch are lost. ${advice(kind)} `
    + '(Warned once per kind of failure; later failures of the same kind are not repeated.)'
}

function advice(kind: string): string {
  if (kind === 'HTTP 400' || kind === 'HTTP 500' || kind === 'HTTP 422') {
    return 'If the receiver rejects array-valued attributes (gen_ai.response.finish_reasons), set the telemetry plugin\'s flatAttributes: true; otherwise see the receiver\'s log.'
  }
  if (kind === 'HTTP 401' || kind === 'HTTP 403') return 'Check the credential in OTEL_EXPORTER_OTLP_HEADERS (or OTEL_EXPORTER_OTLP_TRACES_HEADERS).'
  if (kind === 'HTTP 404') return 'Check the URL: OTEL_EXPORTER_OTLP_ENDPOINT is the collector\'s base URL (/v1/traces is appended), OTEL_EXPORTER_OTLP_TRACES_ENDPOINT the full one.'
  if (kind.startsWith('HTTP ')) return 'Check that the receiver accepts OTLP/HTTP at this URL, and its log.'
  return 'Check that the collector runs and listens at this URL (OTEL_EXPORTER_OTLP_ENDPOINT), or unset it to turn export off.'
}
