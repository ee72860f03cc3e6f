import type { ProviderStartRequest } from '@cordis-subagents/subagents-service'

/** Most tool names passed to the remote as its ceiling; a longer list is cut (never widened). */
export const MAX_ALLOWED_TOOLS = 256

/** Budget limits a host of ours applies to the remote run (the same keys provider-acp passes). */
const PASSED_LIMITS = ['maxSteps', 'maxTokens', 'maxToolCalls', 'maxWallMs', 'maxChildren'] as const

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
  const meta: CrossingMetadata = { depth: request.depth }
  const ceiling = request.maxDepthCeiling
  if (typeof ceiling === 'number' && Number.isSafeInteger(ceiling) && ceiling >= 0) meta.maxDepth = ceiling
  const remaining = typeof request.budget?.remaining === 'function' ? request.budget.remaining() : undefined
  if (remaining) {
    const budget: Record<string, number> = {}
    for (const key of PASSED_LIMITS) {
      const value = remaining[key]
      if (Number.isFinite(value)) budget[key] = Math.max(0, Math.floor(value))
    }
    if (Object.keys(budget).length) meta.budget = budget
  }
  const tools = parentToolNames(request.parent)
  if (tools) meta.allowedTools = tools
  const trace = traceHeaders(request)
  if (trace.traceparent) meta.traceparent = trace.traceparent
  if (trace.tracestate) meta.tracestate = trace.tracestate
  return meta
}

/** The request's W3C trace context as HTTP headers, when it carries a well-formed one. */
export function traceHeaders(request: ProviderStartRequest): Record<string, string> {
  const context = request.traceContext
  const headers: Record<string, string> = {}
  if (!context || typeof context.traceparent !== 'string') return headers
  // version-traceid-parentid-flags (https://www.w3.org/TR/trace-context/#traceparent-header)
  if (!/^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/.test(context.traceparent)) return headers
  headers.traceparent = context.traceparent
  if (typeof context.tracestate === 'string' && context.tracestate.length <= 512 && /^[\x20-\x7e]*$/.test(context.tracestate)) {
    headers.tracestate = context.tracestate
  }
  return headers
}

/** The names of the tools the parent may use (its ceiling); undefined when the caller has no tool view. */
function parentToolNames(parent: unknown): string[] | undefined {
  const tools = (parent as { tools?: { list?: () => Array<{ name?: unknown }> } } | undefined)?.tools
  if (!tools || typeof tools.list !== 'function') return undefined
  let names: string[]
  try {
    names = tools.list().map((tool) => tool?.name).filter((name): name is string => typeof name === 'string' && /^[A-Za-z0-9_-]{1,64}$/.test(name))
  } catch {
    return undefined
  }
  return [...new Set(names)].sort().slice(0, MAX_ALLOWED_TOOLS)
}
