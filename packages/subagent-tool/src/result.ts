import type { SubagentResult } from '@cordis-subagents/subagents-service'
import { headBytes, utf8Length } from '@cordis-subagents/shared'
import { describeBreach } from '@cordis-subagents/shared'

export type CancelCause = 'parent' | 'timeout' | 'unload'

/** Cuts `text` to at most `maxBytes` of UTF-8 without splitting a character; says what was cut. */
export function capOutput(text: string, maxBytes: number): string {
  const cut = headBytes(text, maxBytes)
  if (cut === text) return text
  return `${cut}\n\n[Output truncated: the subagent returned ${utf8Length(text)} bytes; the first ${utf8Length(cut)} are shown.]`
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
export function failureText(head: string, diagnostic: string | undefined, output: string, maxBytes: number, finished = false): string {
  const parts = [head]
  if (diagnostic) parts.push(`Diagnostic: ${diagnostic}`)
  const label = finished
    ? 'Output (the subagent finished; only its cleanup failed):'
    : 'Partial output (the subagent did not finish; treat this as incomplete):'
  parts.push(output.trim() ? `${label}\n${capOutput(output, maxBytes)}` : 'No output was produced.')
  return parts.join('\n\n')
}

function formatMs(ms: number): string {
  if (ms % 60_000 === 0) return `${ms / 60_000} min`
  if (ms % 1000 === 0) return `${ms / 1000} s`
  return `${ms} ms`
}
