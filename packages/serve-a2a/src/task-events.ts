import { randomUUID } from 'node:crypto'
import { Role, type Message, type Part, TaskState, type TaskStatus } from '@a2a-js/sdk'
import { AgentEvent, type ExecutionEventBus, type RequestContext } from '@a2a-js/sdk/server'
import { CROSSING_KEY, type PendingQuestion, questionMeta, toldData } from '@cordis-subagents/shared'

/**
 * The A2A events of one task, in the SDK's 1.0 shapes. A new task is announced with its first state: `working` when its
 * agent starts (one event, not `submitted` then a `working` update: the SDK stores the task again for each), else
 * `submitted` right before whatever comes first (a refusal, a failure).
 */
export class TaskEvents {
  /** A new task not announced yet. */
  private unannounced?: RequestContext

  constructor(
    private readonly bus: ExecutionEventBus, private readonly taskId: string, private readonly contextId: string,
    /** Told the final status when the task ends. */
    private readonly ended?: (status: TaskStatus) => void,
  ) {}

  /** The first event of every execution: the task (a follow-up message re-announces its task at once; a new one waits for its state). */
  task(request: RequestContext): void {
    if (request.task) this.bus.publish(AgentEvent.task(request.task))
    else this.unannounced = request
  }

  /** Announces a new task that was not yet (in `state`); nothing for one that was. */
  announce(state: TaskState = TaskState.TASK_STATE_SUBMITTED): void {
    const request = this.unannounced
    if (!request) return
    this.unannounced = undefined
    this.bus.publish(AgentEvent.task({
      id: this.taskId, contextId: this.contextId, status: { state, message: undefined, timestamp: new Date().toISOString() },
      artifacts: [], history: [request.userMessage], metadata: undefined,
    }))
  }

  working(text?: string, ours?: Record<string, unknown>): void {
    if (this.unannounced && text === undefined && ours === undefined) this.announce(TaskState.TASK_STATE_WORKING)
    else this.status(TaskState.TASK_STATE_WORKING, text, ours)
  }

  /** A `tell_parent` message: a `working` status update whose message is one data part `{ cordisSubagents: { told } }`. */
  told(message: string): void {
    this.publishStatus(TaskState.TASK_STATE_WORKING, {
      messageId: randomUUID(), contextId: this.contextId, taskId: this.taskId, role: Role.ROLE_AGENT,
      metadata: undefined, extensions: [], referenceTaskIds: [],
      parts: [{ content: { $case: 'data', value: toldData(message) as never }, mediaType: 'application/json', filename: '', metadata: undefined }],
    }, undefined)
  }

  artifact(text: string): void {
    this.announce()
    this.bus.publish(AgentEvent.artifactUpdate({
      taskId: this.taskId, contextId: this.contextId, append: false, lastChunk: true, metadata: undefined,
      artifact: { artifactId: 'answer', name: 'answer', description: '', parts: [textPart(text)], metadata: undefined, extensions: [] },
    }))
  }

  /**
   * The task waits for an answer: input-required, the question as the status message (its id,
   * kind and options in the message's `metadata.cordisSubagents.question`), then the end of this
   * execution (the next message on the task resumes the agent).
   */
  park(question: PendingQuestion, ours: Record<string, unknown>): void {
    this.publishStatus(TaskState.TASK_STATE_INPUT_REQUIRED, this.message(question.text, questionMeta(question)), ours)
    this.bus.finished()
  }

  /** A final state, then the end of the execution. */
  end(state: TaskState, text: string | undefined, ours: Record<string, unknown>): void {
    this.ended?.(this.status(state, text, ours))
    this.bus.finished()
  }

  private status(state: TaskState, text: string | undefined, ours: Record<string, unknown> | undefined): TaskStatus {
    return this.publishStatus(state, text === undefined ? undefined : this.message(text), ours)
  }

  private publishStatus(state: TaskState, message: Message | undefined, ours: Record<string, unknown> | undefined): TaskStatus {
    this.announce()
    const status = { state, message, timestamp: new Date().toISOString() }
    const metadata = ours ? { [CROSSING_KEY]: ours } : undefined
    this.bus.publish(AgentEvent.statusUpdate({ taskId: this.taskId, contextId: this.contextId, metadata, status }))
    return status
  }

  private message(text: string, metadata?: Record<string, unknown>): Message {
    return {
      messageId: randomUUID(), contextId: this.contextId, taskId: this.taskId, role: Role.ROLE_AGENT,
      parts: [textPart(text)], metadata, extensions: [], referenceTaskIds: [],
    }
  }
}


function textPart(text: string): Part {
  return { content: { $case: 'text', value: text }, mediaType: 'text/plain', filename: '', metadata: undefined }
}


/** Longest prompt text taken from a message (characters); the body cap bounds it first. */
const MAX_PROMPT_CHARS = 1024 * 1024

/** The prompt (or an answer): the text parts of the message (data and files are not read by this agent). */
export function promptOf(message: Message): string {
  let text = ''
  for (const part of message.parts ?? []) {
    if (part.content?.$case === 'text' && typeof part.content.value === 'string') text += part.content.value
    if (text.length > MAX_PROMPT_CHARS) return text.slice(0, MAX_PROMPT_CHARS)
  }
  return text
}
