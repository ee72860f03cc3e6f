import { TaskState } from '@a2a-js/sdk'
import { foreignQuestion, newQuestionId, type PendingQuestion, questionFromMeta, type Redactor } from '@cordis-subagents/shared'

/**
 * The question an interrupted remote task asks: the status message's text (redacted, control
 * characters out, cut at `MAX_QUESTION_LENGTH` with a marker), the kind from the state
 * (`input-required` / `auth-required`). A remote of ours names the question's id and options in
 * the status message's metadata; any other remote's question gets a fresh id. The path is empty:
 * run ids below the remote are the remote's own.
 */
export function questionOf(
  state: TaskState | undefined, text: string, meta: Record<string, unknown> | undefined, redactor: Redactor,
): PendingQuestion {
  const kind = state === TaskState.TASK_STATE_AUTH_REQUIRED ? 'auth-required' : 'input-required'
  const fallback = kind === 'auth-required'
    ? 'The remote agent needs authentication and did not say how: answer with what it needs, or close the run.'
    : 'The remote agent needs more input and did not say what.'
  const described = questionFromMeta(meta)
  const base: Omit<PendingQuestion, 'text'> = { id: described.id ?? newQuestionId(), kind, path: [], ...described.options ? { options: described.options } : {} }
  return foreignQuestion(base, redactor.redact(text), fallback)
}
