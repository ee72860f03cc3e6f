import { peerLine, peerText } from '../security/peer-text.js'
import { headChars } from './text.js'
import { isObject } from './records.js'
import { MAX_ANSWER_LENGTH, MAX_QUESTION_LENGTH, MAX_QUESTION_PATH, type PendingQuestion, type QuestionKind } from './questions.js'

// A question or an answer from outside (a provider, a model, a host), checked before it rides a tree.
// A question's text and option names are shown to a model or a person: `peerText` / `peerLine` clean
// them here, the one place every question passes (a provider's result, a crossing, a checkpoint).

const KINDS = new Set<string>(['ask', 'permission', 'input-required', 'auth-required', 'budget'] satisfies QuestionKind[])
/** Longest question id, run id on a path, option id or option name (characters). */
const MAX_ID_LENGTH = 256
/** Most options a question may offer. */
const MAX_OPTIONS = 64
/** Most characters of a question's text looked at (cleaned); a text over `MAX_QUESTION_LENGTH` is cut after cleaning. */
const MAX_SCAN = MAX_QUESTION_LENGTH * 4
const CUT_MARK = `\n[… the question was cut at ${MAX_QUESTION_LENGTH} characters]`

const isId = (value: unknown): value is string => typeof value === 'string' && value.length > 0 && value.length <= MAX_ID_LENGTH

/**
 * A well-formed copy of `raw`, or a string saying what is wrong with it. A text over
 * `MAX_QUESTION_LENGTH` is cut with a marker (a live question), or with `cut: false` is a problem
 * (a question read back from a checkpoint was cut when it was asked).
 */
export function checkedQuestion(raw: unknown, { cut = true }: { cut?: boolean } = {}): PendingQuestion | string {
  if (!isObject(raw)) return 'the question is not an object { id, kind, text, path }'
  if (!isId(raw.id)) return `the question's id must be a string of 1-${MAX_ID_LENGTH} characters`
  if (typeof raw.kind !== 'string' || !KINDS.has(raw.kind)) return `the question's kind must be one of ${[...KINDS].join(', ')}`
  // Only a bounded head is cleaned: a text longer than that is cut anyway.
  const given = typeof raw.text === 'string' ? peerText(headChars(raw.text, MAX_SCAN)) : undefined
  if (given === undefined) return 'the question\'s text must be a non-empty string'
  // A text over the scan is cut before it is cleaned: it is marked as cut even when what is left after cleaning is short.
  const scanCut = (raw.text as string).length > MAX_SCAN
  if (!given.trim()) return scanCut ? `the question's first ${MAX_SCAN} characters hold no text to show` : 'the question\'s text must be a non-empty string'
  if (!Array.isArray(raw.path) || raw.path.length > MAX_QUESTION_PATH || !raw.path.every(isId)) {
    return `the question's path must be an array of at most ${MAX_QUESTION_PATH} run ids`
  }
  if ((given.length > MAX_QUESTION_LENGTH || scanCut) && !cut) return `the question's text is longer than ${MAX_QUESTION_LENGTH} characters`
  const text = given.length > MAX_QUESTION_LENGTH || scanCut ? cutText(given) : given
  const question: PendingQuestion = { id: raw.id, kind: raw.kind as QuestionKind, text, path: [...raw.path as string[]] }
  if (raw.options !== undefined) {
    const options = raw.options
    if (!Array.isArray(options) || options.length > MAX_OPTIONS || !options.every((o) => isObject(o) && isId(o.id) && isId(o.name))) {
      return `the question's options must be an array of at most ${MAX_OPTIONS} { id, name } strings`
    }
    // An id is a protocol token, passed back as it is; a name is shown (and never empty).
    question.options = options.map((o: { id: string; name: string }) => ({ id: o.id, name: peerLine(o.name).trim() || o.id }))
  }
  // Advisory (a deadline the asker's provider set): kept when it is a time, dropped otherwise.
  if (typeof raw.expiresAt === 'number' && Number.isFinite(raw.expiresAt) && raw.expiresAt > 0) question.expiresAt = raw.expiresAt
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

const cutText = (text: string): string => headChars(text, MAX_QUESTION_LENGTH - CUT_MARK.length) + CUT_MARK
