// A question that parks a turn (`ask_parent`, a budget suspension) and rides up a delegation tree: its shape, caps and ids.
import { randomUUID } from 'node:crypto'
import { MAX_MESSAGE_LENGTH } from './messages.js'

/** Longest question a child may ask (characters); a longer one is cut with a marker. */
export const MAX_QUESTION_LENGTH = 16 * 1024

/** Longest answer (characters): an answer is a message to the asker. */
export const MAX_ANSWER_LENGTH = MAX_MESSAGE_LENGTH

/** Deepest path a question may ride up (run ids); the depth ceiling keeps real trees far below it. */
export const MAX_QUESTION_PATH = 64

/**
 * Who asked, and so what an answer means:
 * - `ask`: an agent called an ask tool (`ask_parent`); the answer is the tool's result.
 * - `permission`: an ACP agent asked for permission (provider-acp `permission: escalate`); the answer names one of `options`.
 * - `input-required` / `auth-required`: an A2A agent's task waits for a message; the answer is that message.
 * - `budget`: a budget handler suspended a run at a limit (`onBudget` → `suspend`); resuming re-checks the budget.
 */
export type QuestionKind = 'ask' | 'permission' | 'input-required' | 'auth-required' | 'budget'

/** A question waiting for an answer somewhere in a delegation tree. */
export interface PendingQuestion {
  /** Stable id of this question, unique across hosts (`q-` + random). */
  id: string
  kind: QuestionKind
  /** What is asked (at most `MAX_QUESTION_LENGTH` characters). */
  text: string
  /**
   * The run ids the question rode up through, from the holder's child down to the asker's run
   * (`[]` when the agent that parked asked itself, e.g. with `ask_parent`). The deepest id is last.
   */
  path: string[]
  /** Choices the asker offers (an ACP permission's options); the answer should be one `id` or `name`. */
  options?: { id: string; name: string }[]
  /**
   * When the asker stops waiting (ms since the epoch): its provider's bound on parked time (`maxParkedMs`) from the park.
   * A durable journal stores it with the question, so a restarted host ends a stored parked run then, as the live run would.
   */
  expiresAt?: number
}

/**
 * `question` as its holder gets it from a provider that waits at most `maxParkedMs` for the answer: with `expiresAt` (a
 * durable journal keeps it, so a restarted host ends the stored parked run then, as the live run would end).
 */
export function expiringQuestion(question: PendingQuestion, maxParkedMs: number): PendingQuestion {
  return { ...question, expiresAt: Date.now() + maxParkedMs }
}

/** A fresh question id (`q-` + a random UUID): unique across hosts and restarts. */
export function newQuestionId(): string {
  return `q-${randomUUID()}`
}
