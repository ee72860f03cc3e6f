// What a log line shows of text the config file chose (entry ids, package names, plugins' errors): a bounded
// line whatever the save holds. A save that changes 3,000 entries logs ten names and a count, not every name.
import { headChars, peerLine } from '@cordis-subagents/shared'

/** How many items a log line names before it counts the rest. */
const NAMED_PER_LINE = 10

/** `text` on one line (no control, escape, bidi or hidden characters; newlines become spaces), at most `max` characters and `…`. */
export function logText(text: string, max: number): string {
  // Cut before the scrub: the scrub's time is linear in what it is given.
  return peerLine(headChars(text, max, '…'))
}

/**
 * `items` for one log line: the first `NAMED_PER_LINE`, each through `logText(…, max)`, joined with `separator`,
 * then `… and 2,990 more` when there are more.
 */
export function namedList(items: readonly string[], max: number, separator = ', '): string {
  const named = items.slice(0, NAMED_PER_LINE).map((item) => logText(item, max))
  const rest = items.length - named.length
  if (rest > 0) named.push(`… and ${rest.toLocaleString('en-US')} more`)
  return named.join(separator)
}
