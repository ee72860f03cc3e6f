// The crossing, upwards, for a parked turn (issue 30): a child host of ours whose turn parked on a
// question (`stopReason: 'pending'`) tells its parent so over the same channel as the rest of the
// crossing, and takes the next message of that conversation as the answer.
//   - ACP: `_meta.cordisSubagents.pending` of the session/prompt response (the turn ends `end_turn`;
//     the question text is also the turn's message, so a client that does not read `_meta`, a
//     person in Zed, still sees it). The next session/prompt in the session is the answer.
// Everything read is untrusted: a malformed question is dropped (the turn reads as an ordinary
// end_turn); a well-formed one is checked and capped by `checkedQuestion`.

import { CROSSING_KEY } from './crossing.js'
import { checkedQuestion } from './question-check.js'
import type { PendingQuestion } from './questions.js'

/** The key of the pending question inside `cordisSubagents`. */
export const PENDING_KEY = 'pending'

/** The question as the JSON value of `cordisSubagents.pending`. */
export function questionValue(question: PendingQuestion): Record<string, unknown> {
  const value: Record<string, unknown> = { id: question.id, kind: question.kind, text: question.text, path: [...question.path] }
  if (question.options) value.options = question.options.map((option) => ({ id: option.id, name: option.name }))
  return value
}

/** `{ cordisSubagents: { pending: … } }`, to merge into a `_meta` object. */
export function questionMeta(question: PendingQuestion): Record<string, unknown> {
  return { [CROSSING_KEY]: { [PENDING_KEY]: questionValue(question) } }
}

/** The pending question in a `_meta` object (the object holding `cordisSubagents`), or undefined when there is none or it is malformed. */
export function questionFromMeta(meta: unknown): PendingQuestion | undefined {
  const given = isRecord(meta) ? meta[CROSSING_KEY] : undefined
  if (!isRecord(given) || given[PENDING_KEY] === undefined) return undefined
  const question = checkedQuestion(given[PENDING_KEY])
  return typeof question === 'string' ? undefined : question
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === 'object' && !Array.isArray(value)
}
