// The crossing, upwards, for a parked turn (issue 30): a child host of ours whose turn parked on a
// question (`stopReason: 'pending'`) tells its parent so over the same channel as the rest of the
// crossing, and takes the next message of that conversation as the answer.
//   - ACP: `_meta.cordisSubagents.pending` of the session/prompt response (the turn ends `end_turn`;
//     the question text is also the turn's message, so a client that does not read `_meta`, a
//     person in Zed, still sees it). The next session/prompt in the session is the answer.
// Everything read is untrusted: a malformed question is dropped (the turn reads as an ordinary
// end_turn), texts are capped, lists are capped.

import { CROSSING_KEY } from './crossing.js'
import { MAX_QUESTION_LENGTH, MAX_QUESTION_PATH, type PendingQuestion, type QuestionKind } from './questions.js'

/** The key of the pending question inside `cordisSubagents`. */
export const PENDING_KEY = 'pending'

const KINDS: readonly QuestionKind[] = ['ask', 'permission', 'input-required', 'auth-required', 'budget']
/** Longest question id and path entry (run ids, question ids) read. */
const MAX_ID_CHARS = 256
/** Most options read, and the longest option id and name. */
export const MAX_QUESTION_OPTIONS = 64
const MAX_OPTION_CHARS = 256
const CUT_MARK = '… [question cut]'

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
  return isRecord(given) ? checkedQuestion(given[PENDING_KEY]) : undefined
}

/**
 * A well-formed `PendingQuestion` from an untrusted value, or undefined. The text is capped at
 * `MAX_QUESTION_LENGTH` (with a marker), the path at `MAX_QUESTION_PATH` entries, options at
 * `MAX_QUESTION_OPTIONS`; ids must be non-empty strings.
 */
export function checkedQuestion(value: unknown): PendingQuestion | undefined {
  if (!isRecord(value)) return undefined
  const { id, kind, text, path, options } = value
  if (!isId(id) || !KINDS.includes(kind as QuestionKind) || typeof text !== 'string') return undefined
  if (!Array.isArray(path) || path.length > MAX_QUESTION_PATH || !path.every(isId)) return undefined
  const question: PendingQuestion = { id, kind: kind as QuestionKind, text: capText(text), path: [...path] }
  if (options !== undefined) {
    if (!Array.isArray(options)) return undefined
    const kept = options.slice(0, MAX_QUESTION_OPTIONS).filter(isOption)
      .map((option) => ({ id: option.id, name: option.name.slice(0, MAX_OPTION_CHARS) }))
    question.options = kept
  }
  return question
}

function capText(text: string): string {
  if (text.length <= MAX_QUESTION_LENGTH) return text
  return text.slice(0, MAX_QUESTION_LENGTH - CUT_MARK.length) + CUT_MARK
}

function isId(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= MAX_ID_CHARS
}

function isOption(value: unknown): value is { id: string; name: string } {
  return isRecord(value) && typeof value.id === 'string' && value.id.length > 0 && value.id.length <= MAX_OPTION_CHARS
    && typeof value.name === 'string'
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === 'object' && !Array.isArray(value)
}
