// The crossing: what a delegating parent passes to a child that runs elsewhere (an ACP subprocess,
// an A2A server), and what that child reports back. One module owns the names and both sides, so
// the writers (provider-acp, provider-a2a) and the readers (ctx.agents' root runs, the serving
// plugins) cannot drift apart.
//
// Down (parent → child): depth, depth ceiling, remaining budget, tool ceiling, trace context.
//   - ACP: the `SUBAGENT_*` environment variables of a process started for the run, and
//     `_meta.cordisSubagents` of session/new (per session, so a pooled process gets it too);
//     the environment's tool ceiling is scoped to the direct child (see `ScopedCeiling`);
//   - A2A: `metadata.cordisSubagents` of the message.
// Up (child → parent): cumulative usage and work of the child's whole tree, as it goes
//   (spend.ts, under the same key; spend-reporter.ts coalesces it).
// Everything read is untrusted: malformed fields are dropped, never thrown on, and every list is capped.

import { traceContextFrom, type TraceContextHeaders } from './trace-context.js'
import { aidsFrom, type CrossingAids } from './aids.js'
import { NAME_PATTERN } from '../vocabulary/names.js'
import { isRecord } from '../vocabulary/records.js'
import { isCount } from '../vocabulary/usage.js'

/** The key of the crossing in ACP `_meta` and A2A `metadata`. */
export const CROSSING_KEY = 'cordisSubagents'

/** The environment variables of the crossing (ACP, a process started for one run). */
export const CROSSING_ENV = {
  depth: 'SUBAGENT_DEPTH',
  maxDepth: 'SUBAGENT_MAX_DEPTH',
  budget: 'SUBAGENT_BUDGET',
  allowedTools: 'SUBAGENT_ALLOWED_TOOLS',
  crossingFor: 'SUBAGENT_CROSSING_FOR',
} as const

/**
 * `SUBAGENT_CROSSING_FOR`: names the process the env's tool ceiling is for. Every descendant inherits the
 * env, but only the direct child hears the nonce again (`initialize` `_meta.cordisSubagents.crossingFor`).
 */
const NONCE = /^[A-Za-z0-9_-]{16,64}$/

/** Budget limits that cross (the remaining budget a child's root runs are held to). */
export const CROSSING_BUDGET_KEYS = ['maxSteps', 'maxTokens', 'maxToolCalls', 'maxWallMs', 'maxChildren'] as const
export type CrossingBudgetKey = typeof CROSSING_BUDGET_KEYS[number]
export type CrossingBudget = Partial<Record<CrossingBudgetKey, number>>

/** Most tool names passed as a ceiling; a longer list is cut (which only narrows it). */
export const MAX_ALLOWED_TOOLS = 256
/** Longest `SUBAGENT_BUDGET` JSON read. */
const MAX_BUDGET_JSON = 4096

/** What a parent passes down. Every field is optional: an absent one claims nothing. */
export interface Crossing {
  /** The child's depth (the parent's depth + 1). */
  depth?: number
  /** The deepest depth allowed in the tree. */
  maxDepth?: number
  /** What is left of the tree's budget for this child (finite limits only). */
  budget?: CrossingBudget
  /** The tools the parent may use: a child's tools are restricted to these. */
  allowedTools?: string[]
  /** W3C trace context of the delegating call. */
  traceparent?: string
  tracestate?: string
  /** What the direct child is given (a budget note, `tell_parent`): `_meta` / `metadata` only, never the environment. */
  aids?: CrossingAids
}

/** The environment's tool ceiling, held until the ACP `initialize` of the parent names `for` (see `CROSSING_ENV.crossingFor`). */
export interface ScopedCeiling {
  for: string
  allowedTools: string[]
}

// ---- writers -------------------------------------------------------------------------------

/** The crossing as the JSON value of `cordisSubagents` (absent fields are left out). */
export function crossingValue(crossing: Crossing): Record<string, unknown> {
  const value: Record<string, unknown> = {}
  if (isCount(crossing.depth)) value.depth = crossing.depth
  if (isCount(crossing.maxDepth)) value.maxDepth = crossing.maxDepth
  const budget = cleanBudget(crossing.budget)
  if (budget) value.budget = budget
  const tools = cleanTools(crossing.allowedTools)
  if (tools) value.allowedTools = tools
  const trace = traceContextFrom(crossing)
  if (trace) {
    value.traceparent = trace.traceparent
    if (trace.tracestate !== undefined) value.tracestate = trace.tracestate
  }
  const aids = aidsFrom(crossing.aids)
  if (aids) value.aids = aids
  return value
}

/** `{ cordisSubagents: … }`, to merge into a `_meta` or `metadata` object. */
export function crossingMeta(crossing: Crossing): Record<string, unknown> {
  return { [CROSSING_KEY]: crossingValue(crossing) }
}

/**
 * The crossing as `SUBAGENT_*` variables for a process started for one run. `budget: false`
 * leaves the budget out (a pooled process serves several runs: it gets each one's in `_meta`).
 * Trace context travels as `TRACEPARENT`/`TRACESTATE`, which the provider sets itself.
 */
export function crossingEnv(crossing: Crossing, options: { budget?: boolean; for?: string } = {}): Record<string, string> {
  const env: Record<string, string> = {}
  if (isCount(crossing.depth)) env[CROSSING_ENV.depth] = String(crossing.depth)
  if (isCount(crossing.maxDepth)) env[CROSSING_ENV.maxDepth] = String(crossing.maxDepth)
  const budget = options.budget === false ? undefined : cleanBudget(crossing.budget)
  if (budget) env[CROSSING_ENV.budget] = JSON.stringify(budget)
  const tools = cleanTools(crossing.allowedTools)
  if (tools && options.for !== undefined && NONCE.test(options.for)) { // no nonce: the ceiling goes in `_meta` only
    env[CROSSING_ENV.allowedTools] = tools.join(',')
    env[CROSSING_ENV.crossingFor] = options.for
  }
  return env
}

/** `{ cordisSubagents: { crossingFor } }`: the `_meta` of the `initialize` request that binds the environment's ceiling. */
export function crossingForMeta(nonce: string): Record<string, unknown> {
  return { [CROSSING_KEY]: { crossingFor: nonce } }
}

/** The nonce in an `initialize` request's `_meta`, or undefined when there is none (or it is malformed). */
export function crossingForFrom(meta: unknown): string | undefined {
  const given = isRecord(meta) ? meta[CROSSING_KEY] : undefined
  const nonce = isRecord(given) ? given.crossingFor : undefined
  return typeof nonce === 'string' && NONCE.test(nonce) ? nonce : undefined
}

// ---- readers -------------------------------------------------------------------------------

/**
 * The crossing in a `_meta` / `metadata` object (the object holding `cordisSubagents`), read
 * defensively: a field that is not well-formed is dropped.
 */
export function crossingFromMeta(meta: unknown): Crossing {
  const given = isRecord(meta) ? meta[CROSSING_KEY] : undefined
  if (!isRecord(given)) return {}
  const crossing: Crossing = {}
  if (isCount(given.depth)) crossing.depth = given.depth
  if (isCount(given.maxDepth)) crossing.maxDepth = given.maxDepth
  const budget = cleanBudget(given.budget)
  if (budget) crossing.budget = budget
  const tools = toolsFrom(given.allowedTools)
  if (tools) crossing.allowedTools = tools
  const trace = traceContextFrom(given)
  if (trace) Object.assign(crossing, trace)
  const aids = aidsFrom(given.aids)
  if (aids) crossing.aids = aids
  return crossing
}

/**
 * The crossing in a process's environment; a malformed variable is dropped and named in `problems`.
 * Depth, ceiling and budget are tree-wide bounds any descendant honours (a loop through a third-party agent
 * stays bounded). The tool ceiling comes apart, as `scoped`, for the child its nonce names; without one, never.
 */
export function crossingFromEnv(
  env: Record<string, string | undefined> = process.env,
): { crossing: Crossing; problems: string[]; scoped?: ScopedCeiling } {
  const crossing: Crossing = {}
  const problems: string[] = []
  const depth = envCount(env[CROSSING_ENV.depth])
  if (depth === null) problems.push(`${CROSSING_ENV.depth} is not a non-negative integer`)
  else if (depth !== undefined) crossing.depth = depth
  const maxDepth = envCount(env[CROSSING_ENV.maxDepth])
  if (maxDepth === null) problems.push(`${CROSSING_ENV.maxDepth} is not a non-negative integer`)
  else if (maxDepth !== undefined) crossing.maxDepth = maxDepth
  const json = env[CROSSING_ENV.budget]
  if (json !== undefined && json.trim()) {
    const budget = json.length > MAX_BUDGET_JSON ? null : budgetFromJson(json)
    if (budget === null) problems.push(`${CROSSING_ENV.budget} is not a JSON object of non-negative integer limits (${CROSSING_BUDGET_KEYS.join(', ')})`)
    else if (budget) crossing.budget = budget
  }
  const tools = env[CROSSING_ENV.allowedTools]
  if (tools === undefined) return { crossing, problems }
  const nonce = env[CROSSING_ENV.crossingFor]
  if (nonce !== undefined && NONCE.test(nonce)) return { crossing, problems, scoped: { for: nonce, allowedTools: toolsFrom(tools) ?? [] } }
  problems.push(`${CROSSING_ENV.allowedTools} without a valid ${CROSSING_ENV.crossingFor} (a parent older than the scoped crossing): `
    + 'it may be meant for another process, so only a session\'s `_meta` ceiling applies')
  return { crossing, problems }
}

/**
 * The strictest of several crossings (e.g. a process's env and a session's `_meta`): the lowest
 * ceiling and limit, the intersection of tool ceilings. Depth: the deepest claimed (a child is
 * never treated as shallower than any source says). Trace context and aids: the first that has them.
 */
export function strictestCrossing(...crossings: Array<Crossing | undefined>): Crossing {
  const out: Crossing = {}
  for (const crossing of crossings) {
    if (!crossing) continue
    if (crossing.depth !== undefined) out.depth = Math.max(out.depth ?? 0, crossing.depth)
    if (crossing.maxDepth !== undefined) out.maxDepth = Math.min(out.maxDepth ?? Infinity, crossing.maxDepth)
    if (crossing.budget) {
      const budget: CrossingBudget = { ...out.budget }
      for (const key of CROSSING_BUDGET_KEYS) {
        const value = crossing.budget[key]
        if (value !== undefined) budget[key] = Math.min(budget[key] ?? Infinity, value)
      }
      out.budget = budget
    }
    if (crossing.allowedTools) {
      out.allowedTools = out.allowedTools
        ? out.allowedTools.filter((name) => crossing.allowedTools!.includes(name))
        : [...crossing.allowedTools]
    }
    if (!out.traceparent && crossing.traceparent) {
      out.traceparent = crossing.traceparent
      if (crossing.tracestate !== undefined) out.tracestate = crossing.tracestate
    }
    if (!out.aids && crossing.aids) out.aids = crossing.aids
  }
  return out
}

/** Whether `depth` is deeper than the crossing allows, with the ceiling, or undefined when it is not. */
export function depthRefusal(crossing: Crossing, ownCeiling?: number): { depth: number; ceiling: number } | undefined {
  const ceiling = Math.min(crossing.maxDepth ?? Infinity, ownCeiling ?? Infinity)
  if (crossing.depth === undefined || ceiling === Infinity || crossing.depth <= ceiling) return undefined
  return { depth: crossing.depth, ceiling }
}

/** The trace context of a crossing, when it has one. */
export function crossingTrace(crossing: Crossing): TraceContextHeaders | undefined {
  return traceContextFrom(crossing)
}

// ---- helpers -------------------------------------------------------------------------------

function budgetFromJson(json: string): CrossingBudget | undefined | null {
  let parsed: unknown
  try {
    parsed = JSON.parse(json)
  } catch {
    return null
  }
  if (!isRecord(parsed)) return null
  for (const [key, value] of Object.entries(parsed)) {
    // Keys a newer parent sends that this version does not know are ignored; known ones must be counts.
    if ((CROSSING_BUDGET_KEYS as readonly string[]).includes(key) && !isCount(value)) return null
  }
  return cleanBudget(parsed)
}

function cleanBudget(value: unknown): CrossingBudget | undefined {
  if (!isRecord(value)) return undefined
  const budget: CrossingBudget = {}
  let any = false
  for (const key of CROSSING_BUDGET_KEYS) {
    const limit = value[key]
    if (typeof limit === 'number' && Number.isFinite(limit) && limit >= 0) {
      budget[key] = Math.min(Math.floor(limit), Number.MAX_SAFE_INTEGER)
      any = true
    }
  }
  return any ? budget : undefined
}

function cleanTools(value: unknown): string[] | undefined {
  if (!Array.isArray(value)) return undefined
  const names = value.filter((name): name is string => typeof name === 'string' && NAME_PATTERN.test(name))
  return [...new Set(names)].sort().slice(0, MAX_ALLOWED_TOOLS)
}

/** Tool names from an array or a comma-separated string; undefined when neither. */
function toolsFrom(value: unknown): string[] | undefined {
  if (typeof value === 'string') {
    // Bounded before splitting: 256 names of at most 64 characters and their commas.
    return value.slice(0, MAX_ALLOWED_TOOLS * 65).split(',').filter((name) => NAME_PATTERN.test(name)).slice(0, MAX_ALLOWED_TOOLS)
  }
  if (Array.isArray(value)) {
    return value.slice(0, MAX_ALLOWED_TOOLS).filter((name): name is string => typeof name === 'string' && NAME_PATTERN.test(name))
  }
  return undefined
}

/** undefined when unset or blank, null when set to something that is not a count. */
function envCount(value: string | undefined): number | undefined | null {
  if (value === undefined || !value.trim()) return undefined
  // Decimal digits only: Number() would also accept '0x2' and '1e1'.
  if (!/^\d{1,15}$/.test(value.trim())) return null
  return Number(value.trim())
}
