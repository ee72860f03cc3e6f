import { RE2JS } from 're2js'
import { describeError, headChars } from '@cordis-subagents/shared'

/** Longest pattern compiled (characters). */
const MAX_PATTERN_CHARS = 1024
/** Largest compiled pattern (RE2 instructions): the work per input character grows with it. */
const MAX_PROGRAM_SIZE = 1024
/** Most (input characters × program size) one test may cost; a longer input is not checked (the server still is). */
const MAX_WORK = 10_000_000

/** What ajv needs of a RegExp: `test`, and a `toString` that tells patterns apart (ajv keys compiled patterns by it). */
export interface SafeRegExp {
  test(input: string): boolean
  toString(): string
}

/** A pattern the linear-time engine cannot run (lookahead, backreference, too large). */
export class UnsupportedPattern extends Error {}

/**
 * A JSON Schema `pattern` (ECMA-262 syntax, unanchored) on RE2's linear-time engine (re2js, pure
 * JavaScript): no input can make it backtrack on the host's event loop. Lookbehinds are run (also in
 * linear time); lookaheads and backreferences are refused with `UnsupportedPattern`.
 */
export function safeRegExp(pattern: string): SafeRegExp {
  if (pattern.length > MAX_PATTERN_CHARS) throw new UnsupportedPattern(`it is over ${MAX_PATTERN_CHARS} characters`)
  let compiled: RE2JS
  try {
    compiled = RE2JS.compile(RE2JS.translateRegExp(pattern), RE2JS.LOOKBEHINDS)
  } catch (error) {
    throw new UnsupportedPattern(`RE2 cannot run it (${headChars(describeError(error), 200)})`)
  }
  const size = compiled.programSize()
  if (size > MAX_PROGRAM_SIZE) throw new UnsupportedPattern(`it compiles to ${size} RE2 instructions (over ${MAX_PROGRAM_SIZE})`)
  const longest = Math.floor(MAX_WORK / size)
  return {
    test: (input) => input.length > longest || compiled.test(input),
    toString: () => `/${pattern}/re2`,
  }
}
