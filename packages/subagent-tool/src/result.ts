import { describeBreach, describeError, emptyWork, headBytes, utf8Length } from '@cordis-subagents/shared'
import type { SubagentHandle, SubagentOutcome, SubagentResult, SubagentService } from '@cordis-subagents/subagents-service'
import type { ToolResult } from '@cordis-subagents/tools'
import type { Agent } from '@cordis-subagents/agent'
import { pendingResult } from './questions.js'
import { controlVerbs } from './verb-names.js'

// A delegation's outcome as the caller's tool result: the child's answer (capped), or a failure
// with its headline, diagnostic and partial output, or (questions.ts) the question it asks.

export type CancelCause = 'parent' | 'timeout' | 'unload'

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
    // The service's outcome carries its status (and an incomplete one's limit): read, not worked out again.
    status: outcome?.status ?? 'error',
    durationMs: context.durationMs,
    usage: outcome?.usage,
    work,
  }
  if (outcome?.budget) metadata.budget = outcome.budget
  if (outcome?.stepLimit !== undefined) metadata.stepLimit = outcome.stepLimit
  if (metadata.status === 'incomplete' && outcome) metadata.limit = outcome.limit
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
  const asks = outcome.stopReason === 'pending' && outcome.question && run.state === 'parked'
  if (!asks && outcome.stopReason !== 'completed') {
    let diagnostic = outcome.diagnostic
    if (disposeError) diagnostic = [diagnostic, `cleanup also failed: ${describeError(disposeError)}`].filter(Boolean).join('; ')
    return failed(toolResult, failureText(headline(outcome, cause, options.timeout), diagnostic, outcome.output, room))
  }
  if (!asks && disposeError) {
    return failed(toolResult,
      failureText('Subagent finished but could not be cleaned up.', describeError(disposeError), outcome.output, room, true))
  }
  if (!asks) {
    toolResult.content = outcome.output.trim() ? capOutputIn(outcome.output, room) : '(The subagent finished without a final message.)'
    if (outcome.value !== undefined) toolResult.structured = outcome.value
    return toolResult
  }
  // A child parked on a question: the question is the result (questions.ts).
  return pendingResult(subagents, run, outcome.question!, {
    parent: context.parent, questions: options.questions, canSuspend: context.canSuspend, timeout: options.timeout,
    onParked: context.onParked,
    // A message cannot suspend: a further question goes to the caller's model again.
    format: (next, durationMs) => outcomeResult(subagents, run, next, options, { ...context, durationMs, canSuspend: false }),
  }, toolResult)
}

/**
 * The room for the child's output in the caller's tool result: the load's `maxOutputBytes`, and
 * under the caller's own result cap (a tool view may cap lower than the registry), so our note is
 * never cut off. A cut output names the verb that reads the rest when the caller can call it (looked
 * up only when an output is cut).
 */
function outputRoom(subagents: SubagentService, runId: string, maxBytes: number, parent: Agent): OutputRoom {
  const tools = parent.tools as Agent['tools'] | undefined
  const room: OutputRoom = { maxBytes, readMore: () => readMoreOf(subagents, runId, tools) }
  if (typeof tools?.resultCap === 'number') room.resultCap = tools.resultCap
  return room
}

function readMoreOf(subagents: SubagentService, runId: string, tools: Agent['tools'] | undefined): ReadMore | undefined {
  const verb = controlVerbs(subagents).names.result
  return verb && runId.length <= 255 && tools?.has(verb) ? { verb, runId } : undefined
}

/** The verb that reads a run's whole output in pages (the control entry's `subagent_result`), and the run. */
export interface ReadMore {
  verb: string
  runId: string
}

/** How much of a child's output one tool result may show, and how the model reads the rest. */
interface OutputRoom {
  /** The tool load's `maxOutputBytes`. */
  maxBytes: number
  /** The caller's cap on a whole tool result (its tool view's `resultCap`), when known: output and notes stay under it. */
  resultCap?: number
  /** The verb and run to read the whole output with, when the caller can call it: a cut output's note names it. */
  readMore(): ReadMore | undefined
}

/** Bytes kept under the caller's result cap for our truncation note (run ids and verb names are short). */
const TRUNCATION_NOTE_BYTES = 512

/**
 * Cuts `text` to at most `maxBytes` of UTF-8 without splitting a character; says what was cut and,
 * with `readMore`, how to read the rest (from the byte offset where the shown part ends).
 */
export function capOutput(text: string, maxBytes: number, readMore?: ReadMore): string {
  const cut = headBytes(text, maxBytes)
  if (cut === text) return text
  const shown = utf8Length(cut)
  const more = readMore ? ` The whole output is kept: read the rest with ${readMore.verb} { "handle": "${readMore.runId}", "offset": ${shown} }.` : ''
  return `${cut}\n\n[Output truncated: the subagent returned ${utf8Length(text)} bytes; the first ${shown} are shown.${more}]`
}

/**
 * Caps the output that follows `prefixBytes` of other text in a result, under the load's and the
 * caller's caps; a cut one leaves room under the caller's cap for its note.
 */
function capOutputIn(text: string, room: OutputRoom, prefixBytes = 0): string {
  const underCaller = room.resultCap === undefined ? Infinity : room.resultCap - prefixBytes
  const whole = Math.min(room.maxBytes, underCaller)
  if (text.length * 3 <= whole || Buffer.byteLength(text, 'utf8') <= whole) return text
  return capOutput(text, Math.max(0, Math.min(room.maxBytes, underCaller - TRUNCATION_NOTE_BYTES)), room.readMore())
}

/** The tool result of a call whose run never started (refused, or cancelled before the hand-over). */
export function notStartedResult(error: unknown, cause: CancelCause | undefined, timeoutMs: number): ToolResult {
  const code = (error as { code?: string })?.code
  const head = cause ? headline({ stopReason: 'aborted', output: '' }, cause, timeoutMs) : 'Could not start the subagent.'
  return { isError: true, content: `${head}\n\n${code ? `${code}: ` : ''}${describeError(error)}` }
}

export function headline(result: SubagentResult, cause: CancelCause | undefined, timeoutMs: number): string {
  // A run we cancelled may end as `aborted` or, if the provider saw the cancel as a failure, as
  // `error`: either way the cancel is the reason the caller needs to read first.
  if (result.stopReason === 'timeout' || (cause === 'timeout' && (result.stopReason === 'aborted' || result.stopReason === 'error'))) {
    return cause === 'timeout'
      ? `Subagent timed out after ${formatMs(timeoutMs)} and was cancelled. Answer with what you have, or delegate a narrower task.`
      : 'Subagent was stopped by a timeout. Answer with what you have, or delegate a narrower task.'
  }
  if (result.stopReason === 'budget') {
    const which = result.budget ? describeBreach(result.budget) : 'a budget of this delegation tree'
    return `Subagent stopped: ${which} ran out. Answer with what you have; do not delegate this again.`
  }
  if (result.stopReason === 'max-steps') {
    const limit = result.stepLimit
    const used = limit === undefined ? 'all the model calls' : limit === 1 ? 'its one model call' : `all ${limit} model calls`
    return `Subagent stopped: it used ${used} of its turn (maxSteps) without a final answer. `
      + 'Answer with what you have, or delegate a narrower task.'
  }
  if (cause && (result.stopReason === 'aborted' || result.stopReason === 'error')) {
    if (cause === 'unload') return 'Subagent cancelled: the subagent tool was unloaded.'
    return 'Subagent cancelled: the delegating call was aborted.'
  }
  switch (result.stopReason) {
    case 'aborted': return 'Subagent was aborted before it finished.'
    case 'error': return 'Subagent failed.'
    case 'max-tokens': return 'Subagent ran out of output tokens before finishing.'
    case 'refusal': return 'Subagent refused the task.'
    case 'closed': return 'Subagent was closed by the host before it finished (its work so far was checkpointed).'
    case 'interrupted': return 'Subagent was interrupted by the host.'
    case 'pending': return 'Subagent asked a question, but it is no longer waiting for an answer.'
    case 'invalid_output': return 'Subagent\'s answer does not match the output schema (invalid_output).'
    default: return `Subagent ended with an unrecognised stop reason "${String(result.stopReason)}".`
  }
}

/** The text of a failed delegation: headline, diagnostic, and any partial output clearly labelled. */
function failureText(head: string, diagnostic: string | undefined, output: string, room: OutputRoom, finished = false): string {
  const parts = [head]
  if (diagnostic) parts.push(`Diagnostic: ${diagnostic}`)
  const label = finished
    ? 'Output (the subagent finished; only its cleanup failed):'
    : 'Partial output (the subagent did not finish; treat this as incomplete):'
  if (!output.trim()) return [...parts, 'No output was produced.'].join('\n\n')
  const prefix = `${parts.join('\n\n')}\n\n${label}\n`
  return prefix + capOutputIn(output, room, utf8Length(prefix))
}

function formatMs(ms: number): string {
  if (ms % 60_000 === 0) return `${ms / 60_000} min`
  if (ms % 1000 === 0) return `${ms / 1000} s`
  return `${ms} ms`
}

function failed(toolResult: ToolResult, content: string): ToolResult {
  toolResult.isError = true
  toolResult.content = content
  return toolResult
}
