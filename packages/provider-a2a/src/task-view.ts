import type { OutputContract } from '@cordis-subagents/agent'
import { Role, type Artifact, type Message, type Part, type StreamResponse, type Task, TaskState } from '@a2a-js/sdk'
import {
  capBytes, checkedUsage, headChars, isCount, isName, laterSpend, MAX_TOOLS_PER_UPDATE, peerText, spendFromMeta, type SpendReport, toldFrom,
} from '@cordis-subagents/shared'
import type { SubagentResult, SubagentStopReason, SubagentUpdate } from '@cordis-subagents/subagents-service'
import { ArtifactText } from './artifact-text.js'
import { checkedRemoteId } from './remote-ids.js'
import { isInterrupted } from './task-state.js'

type Usage = NonNullable<SubagentResult['usage']>

/** Most parts of one message or artifact read; the rest are ignored. */
export const MAX_PARTS = 256
/** Longest progress text forwarded as one `subagent/update`. */
const MAX_UPDATE_CHARS = 2_000
const UPDATE_KINDS = new Set(['step', 'text', 'thought', 'tool-call', 'tool-result', 'plan', 'status'])
/** Stop reasons a remote of ours may name for a failed task (never `completed`: a state does that). */
const REFINED_STOPS = new Set<SubagentStopReason>(['error', 'max-tokens', 'refusal', 'timeout', 'budget', 'max-steps'])

/**
 * What we know of one remote task, folded from its events (stream) or snapshots (polls): its id,
 * state, the agent's last message, its artifacts (text, capped) and what a remote of ours added
 * in `metadata.cordisSubagents` (usage, a refined stop reason).
 */
export class TaskView {
  taskId?: string
  /** The task's context (a follow-up message names it with the task id). */
  contextId = ''
  state?: TaskState
  /** Text of the current status's message ('' when the status has none): an interrupted task's question. */
  statusText = ''
  /** Metadata of the current status message (a remote of ours describes its question there). */
  statusMeta?: Record<string, unknown>
  /** Text of the latest agent message (a status message, or a direct Message answer). */
  lastAgentText = ''
  /** Set when the answer was a Message (no task): the exchange is over. */
  directMessage = false
  /** Set when the remote answered "task not found" for the task: it is gone there, nothing is left to cancel. */
  gone = false
  usage?: Usage
  /** The latest spend a remote of ours reported for its tree (`metadata.cordisSubagents`: work and tokens). */
  spend?: SpendReport
  refinedStop?: SubagentStopReason
  /** Set when a report grew the spend since the last `usage` update we forwarded. */
  private spendGrew = false
  /** Events and snapshots ignored because they named another task, and the first such id. */
  foreign = 0
  firstForeignId?: string
  /** The latest status timestamp seen (a remote updating it is making progress). */
  private statusStamp = ''
  /** Identity of the current status (timestamp and message id), to tell a new question from the one answered. */
  private statusId = ''
  /** The status the run parked on, while its answer is on its way; undefined once the task moved on. */
  private answered?: string
  private readonly artifacts: ArtifactText
  private truncated = false

  /** The last data part an agent message or artifact carried (a typed result prefers it to the text). */
  lastData?: unknown

  /** `typed`: the request's output schema, checked on return; `told`: takes a served child's `tell_parent` messages. */
  constructor(private readonly maxOutputBytes: number, readonly typed?: OutputContract, private readonly told?: (message: string) => void) {
    this.artifacts = new ArtifactText(maxOutputBytes)
  }

  /** Folds one stream event; returns the progress to forward. */
  apply(event: StreamResponse): SubagentUpdate[] {
    const payload = event.payload
    if (!payload) return []
    switch (payload.$case) {
      case 'task': return this.applyTask(payload.value)
      case 'message': {
        if (this.isForeign(payload.value.taskId)) return []
        this.directMessage = true
        this.noteMessage(payload.value)
        return []
      }
      case 'statusUpdate': {
        const update = payload.value
        if (this.isForeign(update.taskId)) return []
        const told = toldIn(update.status?.message)
        // A told message is news for the parent, not the task's status or output (and not ours to take unless we offered it).
        if (told !== undefined) {
          this.told?.(told)
          return []
        }
        this.take(update.taskId)
        this.takeContext(update.contextId)
        if (update.status) this.noteStatus(update.status)
        this.noteExtension(update.metadata)
        const text = update.status?.message ? this.noteMessage(update.status.message) : ''
        if (update.status) this.statusText = text
        return this.withSpend(progressOf(update.metadata, text))
      }
      case 'artifactUpdate': {
        const update = payload.value
        if (this.isForeign(update.taskId)) return []
        this.take(update.taskId)
        if (update.artifact) this.noteArtifact(update.artifact, update.append)
        return []
      }
      default: return []
    }
  }

  /** Folds a whole task (the first stream event, a send answer, a poll). */
  applyTask(task: Task): SubagentUpdate[] {
    if (this.isForeign(task.id)) return []
    this.take(task.id)
    this.takeContext(task.contextId)
    const before = this.state
    if (task.status) this.noteStatus(task.status)
    this.noteExtension(task.metadata)
    // A snapshot lists every artifact: it replaces what we had (an empty list is a stream's first event).
    if (task.artifacts?.length) this.artifacts.reset()
    for (const artifact of task.artifacts ?? []) this.noteArtifact(artifact, false)
    const text = task.status?.message ? this.noteMessage(task.status.message) : ''
    if (task.status) this.statusText = text
    if (text && before !== this.state) return this.withSpend(progressOf(undefined, text))
    return this.withSpend([])
  }

  /**
   * The task waits for a message from us, and not for the one just sent: after `answer()`, the
   * interrupted status answered (a snapshot may repeat it) counts only once the task left it or
   * shows another status (a new timestamp or message).
   */
  asking(): boolean {
    return isInterrupted(this.state) && (this.answered === undefined || this.answered !== this.statusId)
  }

  /** An answer to the current question is being sent: forget the question's text (the output rule starts again). */
  answer(): void {
    this.answered = this.statusId
    this.lastAgentText = ''
  }

  private noteStatus(status: NonNullable<Task['status']>) {
    this.state = status.state
    if (typeof status.timestamp === 'string') this.statusStamp = status.timestamp.slice(0, 64)
    this.statusId = `${typeof status.timestamp === 'string' ? status.timestamp.slice(0, 64) : ''}|${status.message?.messageId?.slice(0, 100) ?? ''}`
    this.statusMeta = status.message?.metadata
    if (!isInterrupted(status.state)) this.answered = undefined
  }

  /** `updates`, plus a `usage` update carrying the tree's work when a report grew it (the parent charges it). */
  private withSpend(updates: SubagentUpdate[]): SubagentUpdate[] {
    if (!this.spendGrew || !this.spend) return updates
    this.spendGrew = false
    const { steps, toolCalls, delegations, tokens } = this.spend
    const usage = this.usage ?? this.spend.usage ?? { inputTokens: tokens, outputTokens: 0 }
    return [...updates, { kind: 'usage', usage, work: { steps, toolCalls, delegations } }]
  }

  /**
   * What changes when the task makes visible progress: its state, its status (timestamp and
   * message), its artifacts. Polls compare it to notice a task that is stuck.
   */
  progressMark(): string {
    return `${this.state}|${this.statusStamp}|${this.lastAgentText.length}:${this.lastAgentText.slice(-64)}|${this.artifacts.mark()}`
  }

  /**
   * The run's output by the one output rule. `completed` (a completed task, a Message answer): the
   * artifacts' text, else the agent's last non-empty message (an agent may answer in its final status).
   * Otherwise the artifacts' text only: a task that did not complete has no answer, and its status
   * texts are progress or why it ended (the diagnostic's), never partial output.
   */
  output(completed: boolean): { text: string; truncated: boolean } {
    const fromArtifacts = this.artifacts.text()
    const fromMessage = completed && !fromArtifacts.trim()
    const text = fromMessage ? this.lastAgentText : fromArtifacts.trim() ? fromArtifacts : ''
    const kept = capBytes(text, this.maxOutputBytes, '')
    return { text: kept, truncated: (completed && this.truncated) || this.artifacts.truncated || kept !== text }
  }

  /**
   * Takes the first task id the remote names as the run's. One longer than `MAX_REMOTE_ID_CHARS` throws
   * `RemoteIdTooLongError` (never cut: a cut id names another task); the request that brought it fails.
   */
  private take(taskId: string | undefined): void {
    if (!this.taskId && taskId !== undefined) this.taskId = checkedRemoteId('task', taskId)
  }

  /**
   * Takes the first context id the remote names (a status update, a task) as the run's; later ones are
   * ignored. One longer than `MAX_REMOTE_ID_CHARS` throws `RemoteIdTooLongError` (never cut: a cut id
   * names another context); the request that brought it fails, and the run keeps no context.
   */
  private takeContext(contextId: string | undefined): void {
    if (!this.contextId && contextId) this.contextId = checkedRemoteId('context', contextId, this.taskId)
  }

  /**
   * An event naming a task that is not ours (once we know ours): a remote mixing tasks, or one
   * trying to end our run with another task's state or artifacts. Counted and ignored.
   */
  private isForeign(taskId: string | undefined): boolean {
    if (!taskId || !this.taskId || taskId === this.taskId) return false
    this.foreign++
    this.firstForeignId ??= headChars(taskId, 100)
    return true
  }

  private noteMessage(message: Message): string {
    if (message.role !== Role.ROLE_AGENT && message.role !== Role.ROLE_UNSPECIFIED) return ''
    const text = textOf(message.parts)
    if (text.trim()) this.lastAgentText = this.capped(text)
    this.noteData(message.parts)
    this.noteExtension(message.metadata)
    return text
  }

  private noteArtifact(artifact: Artifact, append: boolean) {
    this.artifacts.add(artifact.artifactId, textOf(artifact.parts), append)
    this.noteData(artifact.parts)
  }

  private noteData(parts: Part[] | undefined) {
    if (!this.typed || !Array.isArray(parts)) return
    for (const part of parts.slice(0, MAX_PARTS)) if (part?.content?.$case === 'data') this.lastData = part.content.value
  }

  private capped(text: string): string {
    const kept = capBytes(text, this.maxOutputBytes, '')
    if (kept !== text) this.truncated = true
    return kept
  }

  private noteExtension(metadata: Record<string, unknown> | undefined) {
    const ours = metadata?.cordisSubagents as { usage?: unknown; stopReason?: unknown } | undefined
    if (!ours || typeof ours !== 'object') return
    const usage = checkedUsage(ours.usage)
    if (usage) this.usage = usage
    const spend = spendFromMeta(metadata)
    if (spend) {
      const next = laterSpend(this.spend, spend)
      const grew = !this.spend || next.steps !== this.spend.steps || next.toolCalls !== this.spend.toolCalls
        || next.delegations !== this.spend.delegations || next.tokens !== this.spend.tokens
      this.spend = next
      if (grew) this.spendGrew = true
    }
    if (typeof ours.stopReason === 'string' && REFINED_STOPS.has(ours.stopReason as SubagentStopReason)) this.refinedStop = ours.stopReason as SubagentStopReason
  }
}

/** The told message of a status message that is one data part of ours, else undefined. */
function toldIn(message: Message | undefined): string | undefined {
  const parts = message?.parts
  if (!Array.isArray(parts) || parts.length !== 1 || parts[0]?.content?.$case !== 'data') return undefined
  return toldFrom(parts[0].content.value)
}

/** The text of a message's or artifact's parts: text parts as they are, data parts as JSON, files named. */
function textOf(parts: Part[] | undefined): string {
  if (!Array.isArray(parts)) return ''
  const out: string[] = []
  for (const part of parts.slice(0, MAX_PARTS)) {
    const content = part?.content
    if (!content) continue
    if (content.$case === 'text' && typeof content.value === 'string') out.push(content.value)
    else if (content.$case === 'data') out.push(safeJson(content.value))
    else if (content.$case === 'url') out.push(`[file ${part.filename || ''} ${content.value}]`.replace(/ +/g, ' '))
    else if (content.$case === 'raw') out.push(`[file ${part.filename || '(unnamed)'}, ${part.mediaType || 'binary'}]`)
  }
  return out.join('')
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? ''
  } catch {
    return ''
  }
}

/**
 * Progress for `subagent/update`: a remote of ours says what happened in `metadata.cordisSubagents.update`
 * (a tool call, a step); anything else is a status text.
 */
function progressOf(metadata: Record<string, unknown> | undefined, text: string): SubagentUpdate[] {
  const given = (metadata?.cordisSubagents as { update?: Record<string, unknown> } | undefined)?.update
  if (given && typeof given === 'object' && typeof given.kind === 'string' && UPDATE_KINDS.has(given.kind)) {
    const update: SubagentUpdate = { kind: given.kind as SubagentUpdate['kind'] }
    if (typeof given.text === 'string') update.text = oneUpdate(given.text)
    if (isName(given.tool)) update.tool = given.tool
    if (typeof given.isError === 'boolean') update.isError = given.isError
    if (isCount(given.step)) update.step = given.step
    // serve-a2a sends a step's tool calls in one status update (`tools`, oldest first): one update each for the parent.
    const tools = update.kind === 'tool-call' && Array.isArray(given.tools) ? given.tools.slice(0, MAX_TOOLS_PER_UPDATE).filter(isName) : []
    return tools.length ? tools.map((tool) => ({ ...update, tool })) : [update]
  }
  return text.trim() ? [{ kind: 'status', text: oneUpdate(text) }] : []
}

function oneUpdate(text: string): string {
  return peerText(headChars(text, MAX_UPDATE_CHARS, '…'))
}
