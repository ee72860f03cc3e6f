import { stat } from 'node:fs/promises'
import { isAbsolute } from 'node:path'
import {
  type Crossing, crossingFromMeta, crossingTrace, headChars, type ServedLimits, servedLimits, traceContextFrom, type TraceContextHeaders,
} from '@cordis-subagents/shared'
import type { Config } from './config.js'

/**
 * What a session is held to: the process's crossing (env), the session's (`_meta`) and this server's config
 * (the served-limits rule of @cordis-subagents/shared), and the trace context session/new carried.
 */
export interface SessionLimits extends ServedLimits {
  trace?: TraceContextHeaders
}

/**
 * `env` is the crossing of this process's environment; `rootDepth` is ctx.agents' depth of root
 * agents (SUBAGENT_DEPTH, else its config). A session deeper than ctx.agents' root depth (a
 * pooled process serving a deeper delegation) has its agents' depth ceiling lowered by the
 * difference, so its children are counted at their true depth.
 */
export function sessionLimits(meta: unknown, env: Crossing, rootDepth: number, config: Pick<Config, 'maxDepth' | 'budget'>): SessionLimits {
  const own = crossingFromMeta(meta)
  const limits: SessionLimits = servedLimits({ rootCrossing: env, rootDepth }, own, config)
  const trace = traceContextFrom(meta) ?? crossingTrace(own)
  if (trace) limits.trace = trace
  return limits
}

/**
 * The crossing of a `_meta` without its trace context, as one comparable string (a prompt whose
 * crossing differs from its session's re-bases the session); undefined when it carries none.
 */
export function crossingKey(meta: unknown): string | undefined {
  const { traceparent: _traceparent, tracestate: _tracestate, ...limits } = crossingFromMeta(meta)
  return Object.keys(limits).length ? JSON.stringify(limits) : undefined
}

/** The trace context of a session/prompt's `_meta` (top level, else in the crossing). */
export function promptTrace(meta: unknown): TraceContextHeaders | undefined {
  return traceContextFrom(meta) ?? crossingTrace(crossingFromMeta(meta))
}

/** A client's value as JSON in a message of ours, its head within `max` UTF-16 units (never half a character). */
export function quoted(value: unknown, max = 120): string {
  return headChars(JSON.stringify(value) ?? String(value), max)
}

/** What is wrong with a session's cwd: it must be an absolute path (ACP requires it) of an existing directory. */
export async function cwdProblem(cwd: unknown): Promise<string | undefined> {
  if (typeof cwd !== 'string' || !isAbsolute(cwd)) return `cwd must be an absolute path, got ${quoted(cwd, 200)}`
  const info = await stat(cwd).catch(() => undefined)
  return info?.isDirectory() ? undefined : `cwd ${headChars(cwd, 200)} is not an existing directory`
}

/**
 * Why a session's agent may not run: its parent's tool ceiling leaves it none of the tools served here (`served`), so
 * it would answer from the model alone as if it had worked; undefined when it has some, or nothing is served.
 */
export function noToolsLeft(left: { list(): readonly unknown[] }, served: { list(): readonly { name: string }[] }): string | undefined {
  if (left.list().length) return undefined
  const names = served.list().map((tool) => tool.name).sort()
  if (!names.length) return undefined
  const shown = names.slice(0, 8).join(', ') + (names.length > 8 ? `, … (${names.length})` : '')
  return `the parent's tool ceiling leaves this agent none of the tools it serves (${shown}); `
    + 'give the delegating agent the tools the child needs, or delegate this task elsewhere'
}
