// The aids a parent of ours asks for its child elsewhere (issue 44): a budget note the child's model sees, and a
// `tell_parent` tool whose messages travel back while the child runs. Down, they travel in the crossing's `_meta` /
// `metadata` (never the environment: they are for the direct child only), so an agent that is not ours ignores them.
// Up, a told message: over ACP the extension request `TELL_METHOD` (answered delivered or with a refusal code); over
// A2A a `working` status update whose message holds one data part `{ cordisSubagents: { told } }`.

import { isRecord } from '../vocabulary/records.js'

/** Default and ceiling of a told message's length (characters) and of the messages one child sends. */
export const TELL_BOUNDS = { maxLength: 2000, maxLengthCeiling: 16_000, maxMessages: 20, maxMessagesCeiling: 1000 } as const

/** What the child is given. Absent: not given. */
export interface CrossingAids {
  /** The child's model sees its remaining budget (the crossing's limits) in a note; `wrapUpAt` as `create({ budgetNote })`. */
  budgetNote?: { wrapUpAt?: number }
  /** The child gets a `tell_parent` tool with these bounds (the parent holds it to them too). */
  tellParent?: TellBounds
}

export interface TellBounds {
  maxLength: number
  maxMessages: number
}

/** The ACP extension request a served child sends a told message with: params `{ sessionId, message }`. */
export const TELL_METHOD = '_cordisSubagents/tell'

/** The aids of an agent's options (`{ budgetNote?, tellParent? }` as `ctx.agents.create` takes them), defaults filled in. */
export function aidsOf(options: { budgetNote?: unknown; tellParent?: unknown } | undefined): CrossingAids | undefined {
  if (!options) return undefined
  return aidsFrom({ budgetNote: options.budgetNote || undefined, tellParent: options.tellParent || undefined })
}

/**
 * The aids in a crossing value (`cordisSubagents.aids`), read defensively: `true` or an object turns an aid on,
 * a bound out of range is clamped to its ceiling, anything else is dropped.
 */
export function aidsFrom(value: unknown): CrossingAids | undefined {
  if (!isRecord(value)) return undefined
  const aids: CrossingAids = {}
  const { budgetNote, tellParent } = value
  if (budgetNote === true) aids.budgetNote = {}
  else if (isRecord(budgetNote)) {
    const { wrapUpAt } = budgetNote
    aids.budgetNote = typeof wrapUpAt === 'number' && wrapUpAt >= 0 && wrapUpAt <= 1 ? { wrapUpAt } : {}
  }
  if (tellParent === true || isRecord(tellParent)) {
    const given = isRecord(tellParent) ? tellParent : {}
    aids.tellParent = {
      maxLength: bound(given.maxLength, TELL_BOUNDS.maxLength, TELL_BOUNDS.maxLengthCeiling),
      maxMessages: bound(given.maxMessages, TELL_BOUNDS.maxMessages, TELL_BOUNDS.maxMessagesCeiling),
    }
  }
  return aids.budgetNote || aids.tellParent ? aids : undefined
}

function bound(value: unknown, fallback: number, ceiling: number): number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 1 ? Math.min(value, ceiling) : fallback
}
