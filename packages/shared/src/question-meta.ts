// A question crossing a process boundary: a host serving an agent over A2A parks the task
// (`input-required`) with the question as the status message, and describes the question in that
// message's `metadata.cordisSubagents.question` ({ id, kind, options? }); a parent of ours reads it
// back. One module owns both sides. What is read is untrusted: malformed fields are dropped.

import { stripControl } from './control.js'
import { CROSSING_KEY } from './crossing.js'
import { MAX_QUESTION_LENGTH, type PendingQuestion, type QuestionKind } from './questions.js'
import { checkedQuestion } from './question-check.js'

/** Most answer options read from a question; more are dropped. */
export const MAX_QUESTION_OPTIONS = 32
/** Longest option id or name (characters); a longer option is dropped. */
const MAX_OPTION_CHARS = 200
const KINDS = new Set<QuestionKind>(['ask', 'permission', 'input-required', 'auth-required', 'budget'])

/** What a serving host puts in the status message's metadata for a question (under `cordisSubagents`). */
export function questionMeta(question: PendingQuestion): Record<string, unknown> {
  return {
    [CROSSING_KEY]: {
      question: { id: question.id, kind: question.kind, ...question.options?.length ? { options: question.options } : {} },
    },
  }
}

/** The question's id, kind and options a serving host of ours described, read defensively (all optional). */
export function questionFromMeta(meta: unknown): { id?: string; kind?: QuestionKind; options?: PendingQuestion['options'] } {
  const ours = isRecord(meta) && isRecord(meta[CROSSING_KEY]) ? (meta[CROSSING_KEY] as Record<string, unknown>).question : undefined
  if (!isRecord(ours)) return {}
  const read: { id?: string; kind?: QuestionKind; options?: PendingQuestion['options'] } = {}
  if (typeof ours.id === 'string' && /^[A-Za-z0-9_-]{1,100}$/.test(ours.id)) read.id = ours.id
  if (typeof ours.kind === 'string' && KINDS.has(ours.kind as QuestionKind)) read.kind = ours.kind as QuestionKind
  const options = optionsOf(ours.options)
  if (options) read.options = options
  return read
}

/**
 * A question built from text someone else chose: control characters out, the text cut at
 * `MAX_QUESTION_LENGTH` with a marker (by `checkedQuestion`), `fallback` when it says nothing.
 */
export function foreignQuestion(base: Omit<PendingQuestion, 'text'>, text: string, fallback: string): PendingQuestion {
  const clean = stripControl(text.length > MAX_QUESTION_LENGTH * 2 ? text.slice(0, MAX_QUESTION_LENGTH * 2) : text).trim()
  const checked = checkedQuestion({ ...base, text: clean || fallback })
  // Only a caller's own malformed base can fail the check (ids and options come from the readers above).
  if (typeof checked === 'string') throw new Error(checked)
  return checked
}

function optionsOf(raw: unknown): PendingQuestion['options'] {
  if (!Array.isArray(raw)) return undefined
  const options: NonNullable<PendingQuestion['options']> = []
  for (const entry of raw.slice(0, MAX_QUESTION_OPTIONS)) {
    if (!isRecord(entry)) continue
    const { id, name } = entry
    if (typeof id !== 'string' || typeof name !== 'string' || !id || id.length > MAX_OPTION_CHARS || name.length > MAX_OPTION_CHARS) continue
    options.push({ id: stripControl(id), name: stripControl(name) })
  }
  return options.length ? options : undefined
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
