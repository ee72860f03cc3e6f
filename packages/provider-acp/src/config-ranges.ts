// createAcpProvider, called without the plugin, gets the same range checks as a plugin load. The
// ranges are read from config.ts's schema, so each is written once, and a numeric key added to the
// schema is checked here without anyone remembering to.
import { countProblem, durationProblem } from '@cordis-subagents/shared'
import { Config } from './config.js'

interface FieldSchema {
  type: string
  meta: { min?: number; max?: number }
}

const fields = (Config as unknown as { dict: Record<string, FieldSchema> }).dict
/** The numeric keys of the schema with their ranges; durations are named by how they are used. */
const NUMERIC = Object.entries(fields).filter(([, schema]) => schema.type === 'number')
const DURATIONS = new Set(['startupTimeout', 'cancelGrace', 'killGrace', 'exitGrace', 'idleTimeout', 'maxParkedMs'])

/** The schema's numeric keys (for tests that walk them). */
export const NUMERIC_KEYS: readonly string[] = NUMERIC.map(([key]) => key)

/** The first numeric option of `options` outside its schema range, as a sentence naming it; undefined when all fit. */
export function rangeProblem(options: object): string | undefined {
  for (const [key, schema] of NUMERIC) {
    const value = (options as Record<string, unknown>)[key]
    if (value === undefined) continue
    const range = { min: schema.meta.min, max: schema.meta.max }
    const problem = DURATIONS.has(key) ? durationProblem(key, value, range) : countProblem(key, value, range)
    if (problem) return problem
  }
  return undefined
}
