import { MAX_QUESTION_LENGTH, MAX_QUESTION_PATH, type PendingQuestion, type QuestionKind, utf8Length } from '@cordis-subagents/shared'
import type { ToolSuspension } from '@cordis-subagents/tools'

/** Largest `ToolSuspension.state`, as JSON in UTF-8 bytes: it is checkpointed with the parked turn. */
export const MAX_SUSPENSION_STATE_BYTES = 4096

/** Most choices a question may offer (an ACP permission has a handful). */
export const MAX_QUESTION_OPTIONS = 64

const MAX_ID_LENGTH = 256
const KINDS: ReadonlySet<string> = new Set<QuestionKind>(['ask', 'permission', 'input-required', 'auth-required', 'budget'])
const CUT_MARK = '\n[… the question was cut at 16384 characters]'

/**
 * What a parked turn keeps of a tool's suspension: the question (its text capped at
 * `MAX_QUESTION_LENGTH` characters with a marker) and a JSON copy of `state`; or the problem that
 * makes it unusable (the call is then answered with an error result naming it, and never parks).
 */
export function acceptSuspension(suspension: unknown): ToolSuspension | { problem: string } {
  if (!suspension || typeof suspension !== 'object') return { problem: 'suspend must be an object { question, state? }' }
  const { question, state } = suspension as ToolSuspension
  const checked = checkQuestion(question, true)
  if (typeof checked === 'string') return { problem: checked }
  if (state === undefined) return { question: checked }
  let json: string | undefined
  try {
    json = JSON.stringify(state)
  } catch {
    json = undefined
  }
  if (json === undefined) return { problem: 'suspend.state is not JSON-serialisable (it is checkpointed with the parked turn)' }
  const bytes = utf8Length(json)
  if (bytes > MAX_SUSPENSION_STATE_BYTES) {
    return { problem: `suspend.state is ${bytes} bytes as JSON; at most ${MAX_SUSPENSION_STATE_BYTES} are kept (store a key, such as a run id, instead)` }
  }
  return { question: checked, state: JSON.parse(json) }
}

/**
 * A well-formed copy of `value` as a `PendingQuestion`, or what is wrong with it. `capText` cuts a
 * long text with a marker (a tool's live question); without it a long text is a problem (a restore).
 */
export function checkQuestion(value: unknown, capText: boolean): PendingQuestion | string {
  if (!value || typeof value !== 'object') return 'question must be an object { id, kind, text, path, options? }'
  const { id, kind, text, path, options } = value as PendingQuestion
  if (typeof id !== 'string' || !id || id.length > MAX_ID_LENGTH) return `question.id must be a string of 1-${MAX_ID_LENGTH} characters`
  if (typeof kind !== 'string' || !KINDS.has(kind)) return `question.kind must be one of ${[...KINDS].join(', ')}, got ${JSON.stringify(kind)}`
  if (typeof text !== 'string') return 'question.text must be a string'
  if (text.length > MAX_QUESTION_LENGTH && !capText) return `question.text is longer than ${MAX_QUESTION_LENGTH} characters`
  if (!Array.isArray(path) || path.some((hop) => typeof hop !== 'string' || !hop || hop.length > MAX_ID_LENGTH)) {
    return 'question.path must be an array of run ids (non-empty strings)'
  }
  if (path.length > MAX_QUESTION_PATH) return `question.path has ${path.length} hops; at most ${MAX_QUESTION_PATH} are allowed`
  const question: PendingQuestion = { id, kind, text: capText ? capQuestion(text) : text, path: [...path] }
  if (options === undefined) return question
  if (!Array.isArray(options) || options.length > MAX_QUESTION_OPTIONS
    || options.some((option) => !option || typeof option.id !== 'string' || typeof option.name !== 'string')) {
    return `question.options must be an array of at most ${MAX_QUESTION_OPTIONS} { id, name } strings`
  }
  question.options = options.map((option) => ({ id: option.id, name: option.name }))
  return question
}

function capQuestion(text: string): string {
  if (text.length <= MAX_QUESTION_LENGTH) return text
  let end = MAX_QUESTION_LENGTH - CUT_MARK.length
  // Never leave half a surrogate pair.
  const code = text.charCodeAt(end - 1)
  if (code >= 0xd800 && code <= 0xdbff) end--
  return text.slice(0, end) + CUT_MARK
}
