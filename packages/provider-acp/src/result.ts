import { utf8Length, type Redactor } from '@cordis-subagents/shared'
import { capDiagnostic, MAX_DIAGNOSTIC_BYTES } from '@cordis-subagents/subagents-service'
import type { SubagentResult, SubagentStopReason } from '@cordis-subagents/subagents-service'
import type { OutputBuffer } from './output.js'
import type { PermissionMode } from './permission.js'
import { tailBytes } from './text.js'
import type { UsageTracker } from './usage.js'
import type { OutputContract } from '@cordis-subagents/agent'

/** ACP stop reasons we map; `max_turn_requests` and anything unknown end as an error. */
const STOP_REASONS: Record<string, SubagentStopReason> = {
  end_turn: 'completed',
  max_tokens: 'max-tokens',
  refusal: 'refusal',
  cancelled: 'aborted',
}

/**
 * The result's stop reason for an ACP `stopReason`, and the headline that explains it (none
 * for a plain `end_turn`). `cancelReason` is set when the holder cancelled the run.
 */
export function readStopReason(reason: unknown, cancelReason: string | undefined): { stopReason: SubagentStopReason; headline?: string } {
  const key = reason as string
  const known = Object.hasOwn(STOP_REASONS, key)
  const stopReason = known ? STOP_REASONS[key]! : 'error'
  let headline: string | undefined
  if (key === 'max_turn_requests') {
    headline = 'The agent stopped at its limit of model requests for one turn (max_turn_requests).'
  } else if (!known) {
    headline = `The agent ended its turn with an unknown stop reason ${JSON.stringify(reason)}.`
  } else if (key === 'cancelled') {
    headline = cancelReason !== undefined ? `Cancelled (${cancelReason}).` : 'The agent cancelled its turn by itself.'
  } else if (key === 'max_tokens') {
    headline = 'The agent hit its output token limit (max_tokens).'
  } else if (key === 'refusal') {
    headline = 'The agent refused the task (refusal).'
  }
  return headline ? { stopReason, headline } : { stopReason }
}

export interface ResultSources {
  output: OutputBuffer
  usage: UsageTracker
  denials: readonly string[]
  permission: PermissionMode
  maxOutputBytes: number
  redactor: Redactor
  /** The work a host of ours reported over the crossing, when it did. */
  work: () => { steps: number; toolCalls: number; delegations: number } | undefined
  /** The request's output schema, checked: a `completed` answer must be JSON that matches it. */
  typed?: OutputContract
}

/**
 * Builds a run's result: the output (by the one output rule, with a note where text was
 * dropped), the diagnostic (headline, permission denials, dropped text, stderr tail: scrubbed,
 * within 4 KiB) and the usage so far.
 */
export class ResultBuilder {
  readonly typed?: OutputContract

  constructor(private readonly from: ResultSources) {
    this.typed = from.typed
  }

  result(stopReason: SubagentStopReason, headline?: string, tail = ''): SubagentResult {
    const result: SubagentResult = { stopReason, output: this.outputText() }
    // A typed result is checked on return; a remote child gets no correction round.
    const parsed = this.typed && stopReason === 'completed' ? this.typed.parse(result.output) : undefined
    if (parsed && 'value' in parsed) {
      result.value = parsed.value
      result.output = JSON.stringify(parsed.value)
    } else if (parsed) {
      result.stopReason = 'invalid_output'
      headline = `The agent's answer does not match the output schema (a child over ACP gets no correction round): ${parsed.problem}.`
    }
    const diagnostic = this.diagnostic(headline, tail)
    if (diagnostic) result.diagnostic = diagnostic
    const usage = this.from.usage.current()
    if (usage) result.usage = usage
    const work = this.from.work()
    if (work) result.work = { steps: work.steps, toolCalls: work.toolCalls, delegations: work.delegations }
    return result
  }

  /** An error result with `tail` (the stderr section), and no usage (the turn failed, its usage is unknown). */
  failure(headline: string, tail: string): SubagentResult {
    return { stopReason: 'error', output: this.outputText(), diagnostic: this.diagnostic(headline, tail) }
  }

  /** The agent's message text after its last tool call; all its message text when that is empty. */
  outputText(): string {
    const { output, maxOutputBytes } = this.from
    const text = output.text()
    const dropped = output.dropped()
    if (!dropped) return text
    return `${text}\n\n[Output truncated by provider-acp: the agent sent ${utf8Length(text) + dropped} bytes of message text; `
      + `the first ${utf8Length(text)} are kept (maxOutputBytes ${maxOutputBytes}).]`
  }

  /** headline + permission denials + dropped text + tail, scrubbed and capped; undefined when there is nothing to say. */
  diagnostic(headline?: string, tail = ''): string | undefined {
    const { denials, permission, output, maxOutputBytes, redactor } = this.from
    const parts: string[] = []
    if (headline) parts.push(headline)
    if (denials.length) {
      parts.push(`Permission requests denied (permission: ${permission}): ${denials.join('; ')}. `
        + 'Set permission: allow on the provider to let the agent proceed.')
    }
    const dropped = output.dropped()
    if (dropped) {
      parts.push(`The agent's message text exceeded maxOutputBytes (${maxOutputBytes} bytes): `
        + `${dropped} bytes were dropped as they streamed (the output says where).`)
    }
    if (!parts.length && !tail) return undefined
    const head = redactor.redact(parts.join(' '))
    return capDiagnostic(head, MAX_DIAGNOSTIC_BYTES - utf8Length(tail)) + tail
  }
}

/** "\nstderr (last lines): …", scrubbed, leaving room for a headline within the 4 KiB diagnostic. */
export function stderrSection(raw: string, redactor: Redactor): string {
  if (!raw.trim()) return ''
  const scrubbed = redactor.redact(tailBytes(raw, 16 * 1024)).trimEnd()
  const label = '\nstderr (last lines):\n'
  return label + tailBytes(scrubbed, 3 * 1024 - utf8Length(label))
}
