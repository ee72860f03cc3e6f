import { peerText } from '@cordis-subagents/shared'

/**
 * JSON for the page (snapshots, patches, transcripts): every string in it cleaned by shared's
 * `peerText`. Labels, progress, questions, answers and tool results come from models, agents and
 * remotes; escapes, control, bidi and hiding characters never reach the page (which shows text with
 * `textContent`: no markup, but a U+202E would still reorder what a person reads). Newlines and tabs stay.
 */
export function pageJson(value: unknown): string {
  return JSON.stringify(value, (_key, given: unknown) => typeof given === 'string' ? peerText(given) : given)
}
