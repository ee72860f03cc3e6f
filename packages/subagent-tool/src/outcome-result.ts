import { emptyWork, questionVia, describeError } from '@cordis-subagents/shared'
import type { HoldOptions, SubagentHandle, SubagentOutcome, SubagentService } from '@cordis-subagents/subagents-service'
import type { ToolResult } from '@cordis-subagents/tools'
import type { Agent } from '@cordis-subagents/agent'
import { type CancelCause, capOutputIn, failureText, headline, type OutputRoom } from './result.js'
import { questionText } from './wording.js'
import { passOnAnswered } from './answered-elsewhere.js'

/** How a call turns a child's outcome into its tool result. */
export interface OutcomeOptions {
  provider: string
  timeout: number
  maxOutputBytes: number
  /** What a `pending` child becomes: a question for the caller's model (`answer`, default), or the call's suspension (`escalate`). */
  questions?: 'answer' | 'escalate'
}

/** What else the call knows of how it went. */
export interface OutcomeContext {
  cause?: CancelCause
  /** Why the run's result failed (a run that broke its never-rejects promise). */
  resultError?: unknown
  disposeError?: unknown
  durationMs: number
  /** The calling agent: it holds a parked child until the child is answered. */
  parent: Agent
  /** Whether the call may suspend (false for a background call: its result is a message). */
  canSuspend: boolean
  /** Told of each child the caller now holds parked (the tool load ends them at its unload). */
  onParked?(run: SubagentHandle): void
}

/**
 * The tool result of a delegation's outcome (the first one, or one after a `subagent_reply` or a
 * resume): the child's answer, a failure with its headline and diagnostic, or, for a child parked
 * on a question, that question (for the caller's model, or as the call's suspension).
 */
export function outcomeResult(
  subagents: SubagentService, run: SubagentHandle, outcome: SubagentOutcome | undefined, options: OutcomeOptions, context: OutcomeContext,
): ToolResult {
  const work = outcome?.work ?? emptyWork()
  const metadata: Record<string, unknown> = {
    provider: options.provider,
    runId: run.id,
    childId: run.childId,
    stopReason: outcome?.stopReason ?? 'error',
    durationMs: context.durationMs,
    usage: outcome?.usage,
    work,
  }
  if (outcome?.budget) metadata.budget = outcome.budget
  if (outcome?.stepLimit !== undefined) metadata.stepLimit = outcome.stepLimit
  // Filled in by assignment: `{ ...base, content }` takes V8's slow path for literals with a spread.
  const toolResult: ToolResult = { metadata, work, content: '' }
  if (outcome?.usage) toolResult.usage = outcome.usage
  const { disposeError, cause } = context
  const room = outputRoom(subagents, run.id, options.maxOutputBytes, context.parent)

  if (!outcome) {
    const diagnostic = [`the run's result failed: ${describeError(context.resultError)}`]
    if (disposeError) diagnostic.push(`cleanup also failed: ${describeError(disposeError)}`)
    return failed(toolResult, failureText('Subagent failed.', diagnostic.join('; '), '', room))
  }
  if (outcome.stopReason === 'pending' && outcome.question && run.state === 'parked') {
    return pendingResult(subagents, run, outcome, options, context, toolResult)
  }
  if (outcome.stopReason !== 'completed') {
    let diagnostic = outcome.diagnostic
    if (disposeError) diagnostic = [diagnostic, `cleanup also failed: ${describeError(disposeError)}`].filter(Boolean).join('; ')
    return failed(toolResult, failureText(headline(outcome, cause, options.timeout), diagnostic, outcome.output, room))
  }
  if (disposeError) {
    return failed(toolResult,
      failureText('Subagent finished but could not be cleaned up.', describeError(disposeError), outcome.output, room, true))
  }
  toolResult.content = outcome.output.trim() ? capOutputIn(outcome.output, room) : '(The subagent finished without a final message.)'
  return toolResult
}

/**
 * The room for the child's output in the caller's tool result: the load's `maxOutputBytes`, and
 * under the caller's own result cap (a tool view may cap lower than the registry), so our note is
 * never cut off. A cut output names the verb that reads the rest when the caller can call it.
 */
function outputRoom(subagents: SubagentService, runId: string, maxBytes: number, parent: Agent): OutputRoom {
  const room: OutputRoom = { maxBytes }
  const tools = parent.tools as Agent['tools'] | undefined
  if (typeof tools?.resultCap === 'number') room.resultCap = tools.resultCap
  // Optional: a service-shaped object without the book (a caller's stand-in) just names no verb.
  const verb = (subagents.results as SubagentService['results'] | undefined)?.verb
  if (verb && runId.length <= 255 && tools?.has(verb)) room.readMore = { verb, runId }
  return room
}

/**
 * A child parked on a question: the calling agent holds it (the parked book disposes it when it
 * ends, or with the caller), and the call either suspends with the question (escalate) or gives
 * the caller's model the question and how to answer it (answer). `answer` escalates when the
 * caller has no reply verb to answer with.
 */
function pendingResult(
  subagents: SubagentService, run: SubagentHandle, outcome: SubagentOutcome, options: OutcomeOptions, context: OutcomeContext,
  toolResult: ToolResult,
): ToolResult {
  const question = outcome.question!
  const reply = subagents.parked.reply
  const canReply = !!reply && !!context.parent.tools?.has(reply)
  if (!canReply && !context.canSuspend) {
    // Nobody could ever answer it: end it rather than keep it parked.
    run.dispose().catch(() => {})
    return failed(toolResult, `${questionText(run.id, question, undefined)}

The subagent was stopped: there is no way to answer it here.`)
  }
  // Escalated, the caller's turn parks on the question (an answer given elsewhere continues it);
  // else its model has the question, and an answer given elsewhere comes to it as a message.
  const suspends = context.canSuspend && (options.questions === 'escalate' || !canReply)
  const hold: HoldOptions = suspends
    ? { escalated: true }
    : {
      onAnsweredElsewhere: (next, asked, withdrawn) =>
        passOnAnswered(subagents, run, next, asked, options, context, outcomeResult, withdrawn),
    }
  try {
    subagents.parked.hold(context.parent, run.id, hold)
  } catch (error) {
    run.dispose().catch(() => {})
    const code = (error as { code?: string }).code
    const why = `${code ? `${code}: ` : ''}${describeError(error)}`
    return failed(toolResult, `The subagent asked a question, but it could not be kept waiting for an answer, so it was stopped.\n\n${why}`)
  }
  toolResult.metadata!.question = question
  context.onParked?.(run)
  if (suspends) {
    toolResult.suspend = { question: questionVia(run.id, question), state: { runId: run.id } }
    return toolResult
  }
  toolResult.content = questionText(run.id, question, reply)
  return toolResult
}

function failed(toolResult: ToolResult, content: string): ToolResult {
  toolResult.isError = true
  toolResult.content = content
  return toolResult
}
