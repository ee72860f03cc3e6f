import { MAX_ANSWER_LENGTH, MAX_QUESTION_LENGTH, MAX_QUESTION_PATH, type PendingQuestion, type QuestionKind } from './questions.js'

// A question or an answer from outside (a provider, a model, a host), checked before it rides a tree.

const KINDS = new Set<string>(['ask', 'permission', 'input-required', 'auth-required', 'budget'] satisfies QuestionKind[])
/** Longest question id, run id on a path, option id or option name (characters). */
const MAX_ID_LENGTH = 256
/** Most options a question may offer. */
const MAX_OPTIONS = 64
const CUT_MARK = '\n[question truncated]'

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null
const isId = (value: unknown): value is string => typeof value === 'string' && value.length > 0 && value.length <= MAX_ID_LENGTH

/**
 * A well-formed copy of `raw` (a text over `MAX_QUESTION_LENGTH` is cut with a marker), or a
 * string saying what is wrong with it.
 */
export function checkedQuestion(raw: unknown): PendingQuestion | string {
  if (!isObject(raw)) return 'the question is not an object { id, kind, text, path }'
  if (!isId(raw.id)) return `the question's id must be a string of 1-${MAX_ID_LENGTH} characters`
  if (typeof raw.kind !== 'string' || !KINDS.has(raw.kind)) return `the question's kind must be one of ${[...KINDS].join(', ')}`
  if (typeof raw.text !== 'string' || !raw.text.trim()) return 'the question\'s text must be a non-empty string'
  if (!Array.isArray(raw.path) || raw.path.length > MAX_QUESTION_PATH || !raw.path.every(isId)) {
    return `the question's path must be an array of at most ${MAX_QUESTION_PATH} run ids`
  }
  const text = raw.text.length > MAX_QUESTION_LENGTH ? raw.text.slice(0, MAX_QUESTION_LENGTH - CUT_MARK.length) + CUT_MARK : raw.text
  const question: PendingQuestion = { id: raw.id, kind: raw.kind as QuestionKind, text, path: [...raw.path as string[]] }
  if (raw.options !== undefined) {
    const options = raw.options
    if (!Array.isArray(options) || options.length > MAX_OPTIONS || !options.every((o) => isObject(o) && isId(o.id) && isId(o.name))) {
      return `the question's options must be an array of at most ${MAX_OPTIONS} { id, name } strings`
    }
    question.options = options.map((o: { id: string; name: string }) => ({ id: o.id, name: o.name }))
  }
  return question
}

/** What is wrong with an answer to a question, or undefined when it can be passed on. */
export function answerProblem(answer: unknown): string | undefined {
  if (typeof answer !== 'string' || !answer.trim()) return 'The answer must be a non-empty string.'
  if (answer.length > MAX_ANSWER_LENGTH) return `The answer is at most ${MAX_ANSWER_LENGTH} characters (got ${answer.length}); shorten it.`
  return undefined
}

/** The question with `runId` put in front of its path (as the holder of run `runId` hands it up). */
export function questionVia(runId: string, question: PendingQuestion): PendingQuestion {
  const path = [runId, ...question.path].slice(0, MAX_QUESTION_PATH)
  return { ...question, path }
}
