import type { SubagentResult } from '@cordis-subagents/subagents-service'
import { headBytes, utf8Length } from '@cordis-subagents/shared'
import { describeBreach } from '@cordis-subagents/shared'
import { readMoreText } from './wording.js'

export type CancelCause = 'parent' | 'timeout' | 'unload'

/** The verb that reads a run's whole output in pages (subagent-control's `subagent_result`), and the run. */
export interface ReadMore {
  verb: string
  runId: string
}

/** How much of a child's output one tool result may show, and how the model reads the rest. */
export interface OutputRoom {
  /** The tool load's `maxOutputBytes`. */
  maxBytes: number
  /** The caller's cap on a whole tool result (its tool view's `resultCap`), when known: output and notes stay under it. */
  resultCap?: number
  /** Set when the caller can read the whole output with a verb: a cut output's note names it. */
  readMore?: ReadMore
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
  const more = readMore ? ` ${readMoreText(readMore.verb, readMore.runId, shown)}` : ''
  return `${cut}\n\n[Output truncated: the subagent returned ${utf8Length(text)} bytes; the first ${shown} are shown.${more}]`
}

/**
 * Caps the output that follows `prefixBytes` of other text in a result, under the load's and the
 * caller's caps; a cut one leaves room under the caller's cap for its note.
 */
export function capOutputIn(text: string, room: OutputRoom, prefixBytes = 0): string {
  const underCaller = room.resultCap === undefined ? Infinity : room.resultCap - prefixBytes
  const whole = Math.min(room.maxBytes, underCaller)
  if (text.length * 3 <= whole || Buffer.byteLength(text, 'utf8') <= whole) return text
  return capOutput(text, Math.max(0, Math.min(room.maxBytes, underCaller - TRUNCATION_NOTE_BYTES)), room.readMore)
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
    default: return `Subagent ended with an unrecognised stop reason "${String(result.stopReason)}".`
  }
}

/** The text of a failed delegation: headline, diagnostic, and any partial output clearly labelled. */
export function failureText(head: string, diagnostic: string | undefined, output: string, room: OutputRoom, finished = false): string {
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
