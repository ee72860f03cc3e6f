import type * as Acp from '@agentclientprotocol/sdk'
import type { SubagentResult, SubagentUpdate } from '@cordis-subagents/subagents-service'
import { isAgentNotice } from './agent-notices.js'
import type { OutputBuffer } from './output.js'
import type { Logger } from 'cordis'
import { describeError, headChars, laterSpend, type Redactor, type SpendReport, spendFromMeta } from '@cordis-subagents/shared'
import { readAcpUsage, readContextUsed, type UsageTracker } from './usage.js'

/** Longest text of one progress update (a message chunk, a tool title, a plan). */
const UPDATE_TEXT_CHARS = 4096
/** Tool titles remembered per run (for the matching result); the oldest goes first. */
const MAX_TOOL_TITLES = 1000

export interface ProgressSinks {
  output: OutputBuffer
  usage: UsageTracker
  redactor: Redactor
  emit(update: SubagentUpdate): void
  /** Debug note for usage the agent reported in a shape we do not read. */
  ignoredUsage(where: string, why: string): void
  /** The agent's name from initialize (`agentInfo.name`), for its known notices sent as message text (agent-notices.ts). */
  agentName(): string | undefined
}

/** The run's update sink: `onUpdate` until the run ended (`ended()`); a throwing listener is logged, never fatal. */
export function updateSink(
  onUpdate: ((update: SubagentUpdate) => void) | undefined, ended: () => boolean, log: { logger: Logger; providerName: string },
): (update: SubagentUpdate) => void {
  return (update) => {
    if (!onUpdate || ended()) return
    try {
      onUpdate(update)
    } catch (error) {
      log.logger.warn('%s: onUpdate threw: %s', log.providerName, describeError(error))
    }
  }
}

/**
 * Turns the agent's `session/update` notifications into the run's output and its progress
 * updates (text, thoughts, tool calls and results, plans, usage), every text capped and scrubbed.
 */
export class Progress {
  private readonly toolTitles = new Map<string, string>()
  /** The latest spend a host of ours reported over the crossing (`_meta.cordisSubagents` of a usage_update). */
  private spend?: SpendReport

  constructor(private readonly to: ProgressSinks) {}

  handle(update: Acp.SessionUpdate) {
    const { output, emit } = this.to
    switch (update.sessionUpdate) {
      case 'agent_message_chunk': {
        if (update.content.type !== 'text' || typeof update.content.text !== 'string') return
        const { text } = update.content
        if (isAgentNotice(this.to.agentName(), text)) return emit({ kind: 'status', text: this.text(text) })
        output.push(text, typeof update.messageId === 'string' ? update.messageId : undefined)
        return emit({ kind: 'text', text: this.text(text) })
      }
      case 'agent_thought_chunk':
        output.interrupted()
        if (update.content.type !== 'text' || typeof update.content.text !== 'string') return
        return emit({ kind: 'thought', text: this.text(update.content.text) })
      case 'tool_call': {
        output.toolCall()
        const title = this.text(update.title || update.toolCallId || '', 200)
        this.rememberTitle(toolKey(update.toolCallId), title)
        return emit({ kind: 'tool-call', tool: title, text: title })
      }
      case 'tool_call_update': {
        const key = toolKey(update.toolCallId)
        // An update of a call never announced is the first sign of it: the text after it starts afresh.
        if (this.toolTitles.has(key)) output.interrupted()
        else output.toolCall()
        if (update.title || !this.toolTitles.has(key)) this.rememberTitle(key, this.text(update.title || update.toolCallId || '', 200))
        if (update.status !== 'completed' && update.status !== 'failed') return
        const title = this.toolTitles.get(key)!
        return emit({ kind: 'tool-result', tool: title, isError: update.status === 'failed' })
      }
      case 'plan':
        output.interrupted()
        return emit({
          kind: 'plan',
          text: this.text(update.entries.slice(0, 100).map((entry) => `[${entry.status}] ${headChars(String(entry.content), 500, '…')}`).join('\n')),
        })
      case 'usage_update': {
        // Codex reports usage at the end of each model response: for an agent without message ids,
        // that ends its message.
        output.interrupted()
        // Context occupancy, not tokens spent; token usage may ride along in _meta.usage.
        const meta = (update as { _meta?: Record<string, unknown> | null })._meta
        if (meta && meta.usage !== undefined) this.tokens(meta.usage, 'usage_update _meta.usage')
        const spend = spendFromMeta(meta)
        if (spend) this.spent(spend)
        const used = readContextUsed(update)
        if (typeof used === 'string') return this.to.ignoredUsage('usage_update', used)
        return this.report(this.to.usage.context(used))
      }
      case 'notice': {
        // Fire-and-forget information for the user (we advertise session notices): progress, not turn content.
        const { severity, title, description } = update
        return emit({ kind: 'status', text: this.text(`${String(severity)}: ${String(title)}${description ? ` ${String(description)}` : ''}`) })
      }
      case 'available_commands_update':
      case 'current_mode_update':
      case 'config_option_update':
      case 'session_info_update':
        // Session state, not turn content. Agents send these on their own schedule (codex-acp announces its
        // commands 200 ms after session/new), so one may land inside a message: a boundary there would
        // depend on timing (issue 40).
        return
      default:
        // A user message chunk (a replay), an update type we do not know: it separates messages.
        output.interrupted()
        return
    }
  }

  /** The work (steps, tool calls, delegations) a host of ours reported, cumulative; undefined when none did. */
  work(): SpendReport | undefined {
    return this.spend
  }

  /**
   * A spend report from a host of ours: its tree's tokens and work so far. Tokens feed the usage
   * tracker; work goes up with the usage, so the parent charges steps and tool calls as they happen.
   */
  private spent(report: SpendReport) {
    this.spend = laterSpend(this.spend, report)
    const usage = report.usage ?? { inputTokens: report.tokens, outputTokens: 0 }
    const grown = this.to.usage.tokens(usage)
    const { steps, toolCalls, delegations } = this.spend
    this.to.emit({ kind: 'usage', usage: grown ?? this.to.usage.current() ?? usage, work: { steps, toolCalls, delegations } })
  }

  /** The usage of a turn's `PromptResponse`, when it carries one. */
  responseUsage(response: Acp.PromptResponse) {
    const raw = (response as { usage?: unknown }).usage
    if (raw !== undefined && raw !== null) this.tokens(raw, 'PromptResponse.usage')
  }

  /** Token usage the agent reported (`_meta.usage`, `PromptResponse.usage`). */
  tokens(raw: unknown, where: string) {
    const tokens = readAcpUsage(raw)
    if (typeof tokens === 'string') this.to.ignoredUsage(where, tokens)
    else this.report(this.to.usage.tokens(tokens))
  }

  /** Agent text for a progress update: capped, control characters and secrets removed. */
  text(text: string, maxChars = UPDATE_TEXT_CHARS): string {
    return this.to.redactor.redact(headChars(String(text), maxChars, '…'))
  }

  private report(grown: SubagentResult['usage']) {
    if (grown) this.to.emit({ kind: 'usage', usage: grown })
  }

  private rememberTitle(id: string, title: string) {
    // Bounded: an agent announcing a million tool calls must not grow this map without end.
    if (this.toolTitles.size >= MAX_TOOL_TITLES && !this.toolTitles.has(id)) this.toolTitles.delete(this.toolTitles.keys().next().value!)
    this.toolTitles.set(id, title)
  }
}

/** A tool call id as a map key: capped, so a huge id costs no memory (and both lookups cap alike). */
function toolKey(id: unknown): string {
  return headChars(String(id ?? ''), 256, '…')
}
