import { type Context, createTraceState, isSpanContextValid, ROOT_CONTEXT, type SpanContext, trace } from '@opentelemetry/api'
import { parseTraceparent, type TraceContextHeaders, traceContextFrom } from '@cordis-subagents/shared'

// W3C trace context in and out, with @opentelemetry/api alone (no propagator needs registering).

/** The W3C headers of a span's context; undefined for a span that records nothing (no SDK, not sampled away). */
export function headersOf(context: SpanContext): TraceContextHeaders | undefined {
  if (!isSpanContextValid(context)) return undefined
  const flags = (context.traceFlags & 0xff).toString(16).padStart(2, '0')
  const traceparent = `00-${context.traceId}-${context.spanId}-${flags}`
  const tracestate = context.traceState?.serialize()
  return tracestate ? { traceparent, tracestate } : { traceparent }
}

/** An OpenTelemetry context whose parent is the remote span the headers name; undefined when they name none. */
export function remoteParent(headers: unknown): Context | undefined {
  const valid = traceContextFrom(headers)
  if (!valid) return undefined
  const parent = parseTraceparent(valid.traceparent)!
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: parent.traceId,
    spanId: parent.spanId,
    traceFlags: parent.flags,
    isRemote: true,
    ...valid.tracestate ? { traceState: createTraceState(valid.tracestate) } : {},
  })
}

/** The parent in this process' environment (`TRACEPARENT` / `TRACESTATE`, the OpenTelemetry env carrier). */
export function environmentParent(env: NodeJS.ProcessEnv): Context | undefined {
  return remoteParent({ traceparent: env.TRACEPARENT, tracestate: env.TRACESTATE })
}
