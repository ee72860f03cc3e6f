// The crossing, upwards, for a parked turn (issue 30): a child host of ours whose turn parked on a
// question (`stopReason: 'pending'`) tells its parent so over the same channel as the rest of the
// crossing, and takes the next message of that conversation as the answer. One module owns the
// shape and both sides, for both protocols:
//   - ACP: `_meta.cordisSubagents.question` of the session/prompt response (the turn ends
//     `end_turn`; the question text is also the turn's message, so a client that does not read
//     `_meta`, a person in Zed, still sees it). The next session/prompt in the session is the answer.
//   - A2A: `metadata.cordisSubagents.question` of the status message of a task in `input-required`
//     (the message's text is the question). The next message on the task is the answer.
// Everything read is untrusted: a malformed question is dropped (the turn or the task reads as an
// ordinary one from a peer that is not ours); a well-formed one is checked and capped by `checkedQuestion`.

import { stripControl } from '../security/peer-text.js'
import { CROSSING_KEY } from './crossing.js'
import { isRecord } from '../vocabulary/records.js'
import { checkedQuestion } from '../vocabulary/question-check.js'
import { MAX_QUESTION_LENGTH, type PendingQuestion } from '../vocabulary/questions.js'

/** The key of the question inside `cordisSubagents`. */
export const QUESTION_KEY = 'question'

/** `{ cordisSubagents: { question: … } }`, to merge into a `_meta` / `metadata` object. */
export function questionMeta(question: PendingQuestion): Record<string, unknown> {
  const value: Record<string, unknown> = { id: question.id, kind: question.kind, text: question.text, path: [...question.path] }
  if (question.options) value.options = question.options.map((option) => ({ id: option.id, name: option.name }))
  return { [CROSSING_KEY]: { [QUESTION_KEY]: value } }
}

/** The question in a `_meta` / `metadata` object (the one holding `cordisSubagents`); undefined when there is none or it is malformed. */
export function questionFromMeta(meta: unknown): PendingQuestion | undefined {
  const given = isRecord(meta) ? meta[CROSSING_KEY] : undefined
  if (!isRecord(given) || given[QUESTION_KEY] === undefined) return undefined
  const question = checkedQuestion(given[QUESTION_KEY])
  return typeof question === 'string' ? undefined : question
}

/**
 * A question built from text someone else chose (a peer that is not ours): control characters out,
 * the text cut at `MAX_QUESTION_LENGTH` with a marker (by `checkedQuestion`), `fallback` when it says nothing.
 */
export function foreignQuestion(base: Omit<PendingQuestion, 'text'>, text: string, fallback: string): PendingQuestion {
  const clean = stripControl(text.length > MAX_QUESTION_LENGTH * 2 ? text.slice(0, MAX_QUESTION_LENGTH * 2) : text).trim()
  const checked = checkedQuestion({ ...base, text: clean || fallback })
  // Only a caller's own malformed base can fail the check.
  if (typeof checked === 'string') throw new Error(checked)
  return checked
}
