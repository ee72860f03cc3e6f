// W3C trace context (https://www.w3.org/TR/trace-context/): the two headers that carry a trace
// from a delegating parent to a child elsewhere (an ACP subprocess gets them in `_meta` and in its
// environment). Checked strictly and bounded: they end up in a child's environment.

/** `traceparent` and `tracestate` as the W3C headers spell them. */
export interface TraceContextHeaders {
  traceparent: string
  tracestate?: string
}

/** A parsed version-00 `traceparent`. */
export interface TraceParent {
  traceId: string
  spanId: string
  /** The trace flags byte (bit 0: sampled). */
  flags: number
}

/** Longest `tracestate` accepted (the W3C's recommended minimum to propagate, and our maximum). */
export const MAX_TRACESTATE_LENGTH = 512
const MAX_TRACESTATE_MEMBERS = 32

// Version 00 only: exactly 55 characters, lowercase hex, neither id all zeros.
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/
const INVALID_TRACE_ID = '0'.repeat(32)
const INVALID_SPAN_ID = '0'.repeat(16)
const SIMPLE_KEY = /^[a-z][a-z0-9_\-*/]{0,255}$/
const TENANT_KEY = /^[a-z0-9][a-z0-9_\-*/]{0,240}@[a-z][a-z0-9_\-*/]{0,13}$/
// Printable ASCII except ',' and '='; at most 256 characters; the last one not a space.
const VALUE = /^[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/

/** The parts of a version-00 `traceparent`, or undefined when it is not one. */
export function parseTraceparent(value: unknown): TraceParent | undefined {
  if (typeof value !== 'string' || value.length !== 55) return undefined
  const match = TRACEPARENT.exec(value)
  if (!match || match[1] === INVALID_TRACE_ID || match[2] === INVALID_SPAN_ID) return undefined
  return { traceId: match[1], spanId: match[2], flags: Number.parseInt(match[3], 16) }
}

/** Whether `value` is a well-formed `tracestate` of at most 512 characters and 32 members. */
export function isTracestate(value: unknown): value is string {
  if (typeof value !== 'string' || value.length > MAX_TRACESTATE_LENGTH) return false
  const members = value.split(',')
  if (members.length > MAX_TRACESTATE_MEMBERS) return false
  let seen = 0
  for (const raw of members) {
    const member = raw.replace(/^[ \t]+|[ \t]+$/g, '')
    // Empty members (",,") are allowed by the spec and carry nothing.
    if (!member) continue
    const equals = member.indexOf('=')
    if (equals < 1) return false
    const key = member.slice(0, equals)
    if (!SIMPLE_KEY.test(key) && !TENANT_KEY.test(key)) return false
    if (!VALUE.test(member.slice(equals + 1))) return false
    seen++
  }
  return seen > 0
}

/** Why `value` is not a trace context `{ traceparent, tracestate? }` we pass on, or undefined when it is one. */
export function traceContextProblem(value: unknown, name: string): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return `${name} must be an object { traceparent, tracestate? }.`
  }
  const { traceparent, tracestate } = value as Record<string, unknown>
  if (!parseTraceparent(traceparent)) {
    return `${name}.traceparent must be a W3C version-00 traceparent ("00-<32 hex trace id>-<16 hex span id>-<2 hex flags>", lowercase, ids not all zeros).`
  }
  if (tracestate !== undefined && !isTracestate(tracestate)) {
    return `${name}.tracestate must be a W3C tracestate (comma-separated key=value members, at most ${MAX_TRACESTATE_MEMBERS} of them and ${MAX_TRACESTATE_LENGTH} characters).`
  }
  return undefined
}

/**
 * A checked, plain copy of a caller's trace context: each field is read once (a getter or a later
 * change of the caller's object cannot alter what was checked), so what reaches a child's
 * environment is exactly what passed. `problem` says what is wrong instead.
 */
export function checkedTraceContext(value: unknown, name: string): { context: TraceContextHeaders } | { problem: string } {
  let copy: unknown = value
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const { traceparent, tracestate } = value as Record<string, unknown>
    copy = tracestate === undefined ? { traceparent } : { traceparent, tracestate }
  }
  const problem = traceContextProblem(copy, name)
  return problem ? { problem } : { context: Object.freeze(copy as TraceContextHeaders) }
}

/**
 * The trace context carried by an object with `traceparent` / `tracestate` fields (an ACP `_meta`,
 * an environment): undefined when the traceparent is missing or malformed; a malformed tracestate is dropped.
 */
export function traceContextFrom(carrier: unknown): TraceContextHeaders | undefined {
  if (typeof carrier !== 'object' || carrier === null) return undefined
  const { traceparent, tracestate } = carrier as Record<string, unknown>
  if (!parseTraceparent(traceparent)) return undefined
  return isTracestate(tracestate) ? { traceparent: traceparent as string, tracestate } : { traceparent: traceparent as string }
}
