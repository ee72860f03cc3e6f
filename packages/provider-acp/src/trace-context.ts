import type * as Acp from '@agentclientprotocol/sdk'
import type { TraceContext } from '@cordis-subagents/subagents-service'

// The delegation's W3C trace context, passed to the ACP agent so its spans join the parent's trace:
// in `_meta` of session/new (session/load) and session/prompt (the root keys ACP reserves for it),
// and in the environment of a process started for this run (`TRACEPARENT` / `TRACESTATE`, the
// OpenTelemetry environment carrier). The service checked the context (strict W3C, bounded).

/** The `_meta` keys of a trace context; undefined without one. */
export function traceMeta(context: TraceContext | undefined): Record<string, string> | undefined {
  if (!context) return undefined
  return context.tracestate ? { traceparent: context.traceparent, tracestate: context.tracestate } : { traceparent: context.traceparent }
}

/**
 * Sets the child's `TRACEPARENT` / `TRACESTATE` to this delegation's context. Ones inherited from
 * this host are always removed: they name the host's own parent span, not the delegation.
 * `context` is omitted for a pooled process (it serves several delegations; `_meta` carries each one's).
 */
export function setTraceEnv(env: Record<string, string>, context: TraceContext | undefined): Record<string, string> {
  delete env.TRACEPARENT
  delete env.TRACESTATE
  if (context) {
    env.TRACEPARENT = context.traceparent
    if (context.tracestate) env.TRACESTATE = context.tracestate
  }
  return env
}

/**
 * session/prompt with `_meta`. The SDK's `ActiveSession.prompt` sends no `_meta`; it sends through
 * its connection context, which a view of the session wraps for this one call. When the SDK's
 * shape differs, the prompt goes out without `_meta` (the trace then continues from session/new's).
 */
export function promptWithMeta(
  session: Acp.ActiveSession, prompt: Acp.ContentBlock[], meta: Record<string, unknown> | undefined,
): Promise<Acp.PromptResponse> {
  const cx = meta && (session as unknown as { cx?: { request?: unknown } }).cx
  if (!cx || typeof cx.request !== 'function') return session.prompt(prompt)
  const request = cx.request as (method: string, params: object, options?: unknown) => Promise<unknown>
  const withMeta = {
    request: (method: string, params: object, options?: unknown) => request.call(cx, method, { ...params, _meta: meta }, options),
  }
  const view = Object.create(session, { cx: { value: withMeta } }) as Acp.ActiveSession
  return session.prompt.call(view, prompt)
}
