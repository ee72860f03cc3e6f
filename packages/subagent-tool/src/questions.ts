import { describeError, LimitError, MAX_MESSAGE_LENGTH, type PendingQuestion, questionVia, quotedLines } from '@cordis-subagents/shared'
import type { HoldOptions, SubagentHandle, SubagentOutcome, SubagentService } from '@cordis-subagents/subagents-service'
import type { ToolResult } from '@cordis-subagents/tools'
import type { Agent } from '@cordis-subagents/agent'
import { controlVerbs, verbsSeenBy } from './verb-names.js'

/** What a call whose child asks a question knows: who holds the child, whether it may suspend, how a later outcome reads. */
export interface Asked {
  /** The calling agent: it holds the parked child until the child is answered. */
  parent: Agent
  /** `answer` (default): the caller's model gets the question; `escalate`: the call suspends on it. */
  questions?: 'answer' | 'escalate'
  /** Whether the call may suspend (false for a background call: its result is a message). */
  canSuspend: boolean
  /** The tool's timeout (ms): it bounds the child's work after an answer given elsewhere too. */
  timeout: number
  /** Told of each child the caller now holds parked (the tool load ends them at its unload). */
  onParked?(run: SubagentHandle): void
  /** The tool result of the child's next outcome, as a message brings it (a message cannot suspend). */
  format(outcome: SubagentOutcome | undefined, durationMs: number): ToolResult
}

/**
 * A child parked on a question: the calling agent holds it (the parked book disposes it when it
 * ends, or with the caller), and the call either suspends with the question (escalate) or gives
 * the caller's model the question and how to answer it (answer). `answer` escalates when the
 * caller has no reply verb to answer with.
 */
export function pendingResult(
  subagents: SubagentService, run: SubagentHandle, question: PendingQuestion, asked: Asked, toolResult: ToolResult,
): ToolResult {
  // The reply verb of the newest control load this caller can call (a child sees only `nested` loads).
  const reply = verbsSeenBy(controlVerbs(subagents), asked.parent.tools, 'reply')?.reply
  const canReply = reply !== undefined
  if (!canReply && !asked.canSuspend) {
    // Nobody could ever answer it: end it rather than keep it parked.
    run.dispose().catch(() => {})
    toolResult.isError = true
    toolResult.content = `${questionText(run.id, question, undefined)}\n\nThe subagent was stopped: there is no way to answer it here.`
    return toolResult
  }
  // Escalated, the caller's turn parks on the question (an answer given elsewhere continues it);
  // else its model has the question, and an answer given elsewhere comes to it as a message.
  const suspends = asked.canSuspend && (asked.questions === 'escalate' || !canReply)
  const hold: HoldOptions = suspends
    ? { escalated: true }
    : { onAnsweredElsewhere: (next, question, withdrawn) => passOnAnswered(subagents, run, next, question, asked, withdrawn) }
  try {
    subagents.parked.hold(asked.parent, run.id, hold)
  } catch (error) {
    run.dispose().catch(() => {})
    const code = (error as { code?: string }).code
    const why = `${code ? `${code}: ` : ''}${describeError(error)}`
    toolResult.isError = true
    toolResult.content = `The subagent asked a question, but it could not be kept waiting for an answer, so it was stopped.\n\n${why}`
    return toolResult
  }
  toolResult.metadata!.question = question
  asked.onParked?.(run)
  if (suspends) {
    toolResult.suspend = { question: questionVia(run.id, question), state: { runId: run.id } }
    return toolResult
  }
  toolResult.content = questionText(run.id, question, reply)
  return toolResult
}

/**
 * What the caller's model reads when its child asks a question (`questions: answer`). The child's text and
 * options are quoted line by line (one option a line), so only our lines start a line: none imitates the reply line.
 */
function questionText(runId: string, question: PendingQuestion, reply: string | undefined): string {
  const lines = [`Subagent ${runId} asks you a question and waits for your answer (it is parked; it does nothing meanwhile):`, '', quotedLines(question.text)]
  if (question.options?.length) lines.push('', 'Options:', quotedLines(question.options.map((option) => `${option.id} (${option.name})`).join('\n')))
  lines.push('', reply
    ? `Answer it with ${reply} { "handle": "${runId}", "answer": "…" }: that call returns the subagent's next result (its answer, or its next question). If you cannot answer it yourself, ask your own parent first if you can.`
    : 'You have no tool to answer it with.')
  return lines.join('\n')
}

/**
 * A child whose question the caller's model was given (answer mode) was answered by someone else
 * (a live page, the host by run id), or went on without an answer (`withdrawn`: whoever asked it
 * below ended unanswered): its next outcome comes to the caller as an inbox message,
 * formatted as the tool formats a result (another question included), with its usage and work.
 * The caller's turn waits for it (an inbox hold); an idle caller reads it on its next turn. The
 * tool's `timeout` bounds the child's work, as it bounds a reply's: past it the child is cancelled.
 */
function passOnAnswered(
  subagents: SubagentService, run: SubagentHandle, next: Promise<SubagentOutcome>, question: PendingQuestion,
  asked: Asked, withdrawn: boolean,
): void {
  const { inbox } = asked.parent
  let release: () => void
  try {
    release = inbox.hold()
  } catch {
    // The caller is disposed: nobody is left to tell (the parked book ends the child).
    return
  }
  const startedAt = performance.now()
  const timer = asked.timeout > 0 ? setTimeout(() => {
    // The held run, not a reattached call's handle (whose cancel does nothing).
    const held = subagents.parked.get(asked.parent, run.id) ?? run
    const cancel = held.cancel as (reason?: string | Error) => void
    cancel(new LimitError('TIMEOUT', `the subagent tool's timeout of ${asked.timeout} ms elapsed after its question was answered`))
  }, asked.timeout) : undefined
  next.then((outcome) => {
    const result = asked.format(outcome, Math.round(performance.now() - startedAt))
    inbox.post(answeredElsewhereText(run.id, question, result, withdrawn), { usage: result.usage, work: result.work })
  }).catch(() => {
    // The caller was disposed meanwhile, or its inbox is full: there is nobody to read it.
  }).finally(() => {
    clearTimeout(timer)
    release()
  })
}

/**
 * The message that brings the caller a child's result after someone else answered its question,
 * or after it was withdrawn (whoever asked it below ended, so the child went on without an answer).
 * It reaches the inbox without a sender (nothing quotes it there), so the result is quoted under its header here.
 */
function answeredElsewhereText(runId: string, question: PendingQuestion, result: ToolResult, withdrawn: boolean): string {
  const asked = JSON.stringify(question.text.slice(0, 200))
  const how = withdrawn
    ? 'was withdrawn (whoever asked it ended without an answer, and the subagent went on without one); do not answer it.'
    : 'was answered by someone else (not through your reply); do not answer it again.'
  const header = `[Subagent ${runId}: its question ${asked} ${how} Its next result${result.isError ? ' (a failure)' : ''} follows.]`
  return `${header}\n\n${quotedLines(result.content, MAX_MESSAGE_LENGTH - header.length - 200)}`
}
