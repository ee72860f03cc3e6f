// Bounded durations and counts for every config schema and programmatic option: integers in range, never a timer
// Node would fire at once. A constant's choice of values with their descriptions.
import { Schema } from 'cordis'

/**
 * The longest delay Node's timers honour (2^31 - 1 ms, about 24.8 days). A longer one fires
 * after 1 ms, so a timeout of "a year" would cancel everything at once.
 */
export const MAX_TIMER_MS = 2_147_483_647

export interface Range {
  min?: number
  max?: number
}

/** A config duration in ms: an integer from `min` (default 0) to `max` (at most `MAX_TIMER_MS`). */
export function duration(range: Range = {}): Schema<number> {
  return Schema.natural().min(range.min ?? 0).max(Math.min(range.max ?? MAX_TIMER_MS, MAX_TIMER_MS))
}

/** A config count: a safe integer from `min` (default 0) to `max` (at most `Number.MAX_SAFE_INTEGER`). */
export function count(range: Range = {}): Schema<number> {
  return Schema.natural().min(range.min ?? 0).max(Math.min(range.max ?? Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER))
}

/**
 * The same check as `duration()` for values that do not pass through a schema (options of a
 * programmatic API): undefined when fine, else a sentence naming `name`, the value and the range.
 */
export function durationProblem(name: string, value: unknown, range: Range = {}): string | undefined {
  return problem(name, value, range.min ?? 0, Math.min(range.max ?? MAX_TIMER_MS, MAX_TIMER_MS), ' ms')
}

/** The same check as `count()` for values that do not pass through a schema. */
export function countProblem(name: string, value: unknown, range: Range = {}): string | undefined {
  return problem(name, value, range.min ?? 0, Math.min(range.max ?? Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER), '')
}

function problem(name: string, value: unknown, min: number, max: number, unit: string): string | undefined {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= min && value <= max) return undefined
  const shown = typeof value === 'number' ? String(value) : JSON.stringify(value) ?? typeof value
  return `${name} must be an integer from ${min} to ${max}${unit}, got ${shown}.`
}

/**
 * A config value that is one of a few named choices, each with the description a config UI (the
 * Koishi console) shows next to it: `choice({ reject: 'Deny', allow: 'Allow once' })`.
 */
export function choice<K extends string>(options: Record<K, string>): Schema<K> {
  return Schema.union((Object.keys(options) as K[]).map((key) => Schema.const(key).description(options[key]))) as Schema<K>
}
