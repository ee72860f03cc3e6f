import { aidsOf, remoteHandle, traceContextFrom, ToldRelay, treeCrossing } from '@cordis-subagents/shared'
import type { ProviderStartRequest } from '@cordis-subagents/subagents-service'


/**
 * What crosses the wire about the delegating tree, in the message's `metadata.cordisSubagents`:
 * the same shape provider-acp puts in session/new's `_meta.cordisSubagents`, plus trace context.
 * A remote that is not ours ignores it; ours (examples/quickstart's A2A server) honours it.
 */
export interface CrossingMetadata {
  /** The child's depth (the parent's depth + 1). */
  depth: number
  /** The deepest depth allowed in this tree. */
  maxDepth?: number
  /** What is left of the tree's budget (finite limits only). */
  budget?: Record<string, number>
  /** The tools the parent may use: the remote's tools are restricted to these. */
  allowedTools?: string[]
  /** W3C trace context of the delegating call (also sent as the `traceparent` / `tracestate` headers). */
  traceparent?: string
  tracestate?: string
}

export function crossingMetadata(request: ProviderStartRequest): CrossingMetadata {
  const meta: CrossingMetadata = treeCrossing(request)
  const trace = traceHeaders(request)
  if (trace.traceparent) meta.traceparent = trace.traceparent
  if (trace.tracestate) meta.tracestate = trace.tracestate
  return meta
}

/** The request's W3C trace context as HTTP headers, when it carries a well-formed one. */
export function traceHeaders(request: ProviderStartRequest): Record<string, string> {
  const context = traceContextFrom(request.traceContext)
  if (!context) return {}
  const { traceparent, tracestate } = context
  return tracestate === undefined ? { traceparent } : { traceparent, tracestate }
}

/**
 * Where a served child's `tell_parent` messages go when the request asked for `tellParent`: the delegating agent's inbox,
 * labelled `<parent handle>/<name>.<run id>`, under the offered bounds. A status update has no answer, so a refusal
 * (a full inbox, a message past the bounds) drops the message here; the child is not told.
 */
export function toldRelay(request: ProviderStartRequest): ((message: string) => void) | undefined {
  const bounds = aidsOf(request.agentOptions)?.tellParent
  if (!bounds) return undefined
  const relay = new ToldRelay(request.parent, remoteHandle(request.parent, request.agentOptions?.name ?? 'a2a', request.runId), bounds)
  return (message) => void relay.deliver(message)
}
