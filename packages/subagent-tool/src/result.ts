import { describeBreach, describeError, headBytes, LimitError, limitStop, utf8Length } from '@cordis-subagents/shared'
import type { SubagentResult, SubagentService } from '@cordis-subagents/subagents-service'
import type { ToolResult } from '@cordis-subagents/tools'
import type { Agent } from '@cordis-subagents/agent'
import type { CancelCause, OutputRoom, ReadMore } from './call-types.js'
import { controlVerbs, verbsSeenBy } from './verb-names.js'

// The words of a call's rarer tool results (call.ts): a failure's headline and text, a cancel's reason, a call that never
// started, a cut output and the verb that reads the rest.

export function readMoreOf(subagents: SubagentService, runId: string, tools: Agent['tools'] | undefined): ReadMore | undefined {
  if (runId.length > 255) return undefined
  // The result verb of the newest control load this caller can call.
  const verb = verbsSeenBy(controlVerbs(subagents), tools, 'result')?.result
  return verb === undefined ? undefined : { verb, runId }
}

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

function formatMs(ms: number): string {
  if (ms % 60_000 === 0) return `${ms / 60_000} min`
  if (ms % 1000 === 0) return `${ms / 1000} s`
  return `${ms} ms`
}

/**
 * Why the run is cancelled, as its abort reason: a timeout is a limit (the run ends `timeout`),
 * and a parent stopped by a limit passes that limit down (its children end `budget` / `timeout` too).
 */
export function abortReason(cause: CancelCause, timeout: number, parentReason: unknown): Error {
  if (cause === 'timeout') return new LimitError('TIMEOUT', reasonText(cause, timeout))
  if (cause === 'parent' && limitStop(parentReason) && parentReason instanceof Error) return parentReason
  return new Error(reasonText(cause, timeout))
}

function reasonText(cause: CancelCause, timeout: number): string {
  switch (cause) {
    case 'parent': return 'the delegating call was aborted'
    case 'timeout': return `the subagent tool's timeout of ${timeout} ms elapsed`
    case 'unload': return 'the subagent tool was unloaded'
  }
}

/**
 * A failed delegation's tool result: headline, diagnostic, and any partial output clearly labelled, cut by `cap` to its
 * `room` after the text before it (call.ts caps every output).
 */
export function failed(
  toolResult: ToolResult, head: string, diagnostic: string | undefined, output: string, room: OutputRoom,
  cap: (output: string, room: OutputRoom, prefixBytes: number) => string, finished = false,
): ToolResult {
  const parts = [head]
  if (diagnostic) parts.push(`Diagnostic: ${diagnostic}`)
  const label = finished
    ? 'Output (the subagent finished; only its cleanup failed):'
    : 'Partial output (the subagent did not finish; treat this as incomplete):'
  toolResult.isError = true
  if (!output.trim()) toolResult.content = [...parts, 'No output was produced.'].join('\n\n')
  else {
    const prefix = `${parts.join('\n\n')}\n\n${label}\n`
    toolResult.content = prefix + cap(output, room, utf8Length(prefix))
  }
  return toolResult
}

