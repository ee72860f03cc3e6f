import { randomUUID } from 'node:crypto'
import { type Message, Role, type StreamResponse, type Task } from '@a2a-js/sdk'
import type { Client } from '@a2a-js/sdk/client'
import { TaskNotFoundError } from '@a2a-js/sdk/errors'
import { TaskNotFoundError as TaskNotFoundErrorV03 } from 'a2a-sdk-v03/client'
import { headChars } from '@cordis-subagents/shared'

/**
 * A message a run sends: the prompt (or an answer) as one text part, the crossing in its metadata.
 * An answer to an interrupted task names the task and its context.
 */
export interface Outgoing {
  prompt: string
  metadata: Record<string, unknown>
  taskId?: string
  contextId?: string
}

/** Per-request options: the run's abort signal and the trace headers. */
export interface WireOptions {
  signal: AbortSignal
  serviceParameters: Record<string, string>
}

/**
 * The four calls a run makes, in one protocol version's wire format, answered in the 1.0 SDK's
 * shapes (the internal shape `TaskView` folds), so every version shares one run and one view.
 */
export interface A2aWire {
  /** Streams the message's events (1.0 `SendStreamingMessage`, 0.3 `message/stream`). */
  stream(message: Outgoing, options: WireOptions): AsyncIterator<StreamResponse>
  /** Sends without waiting for the task to finish (1.0 `SendMessage` + returnImmediately, 0.3 `message/send` + blocking false). */
  send(message: Outgoing, options: WireOptions): Promise<Task | Message>
  /** Rejects `TaskGoneError` when the remote no longer knows the task. */
  getTask(id: string, options: WireOptions): Promise<Task>
  cancelTask(id: string, options: WireOptions): Promise<Task>
}

/** The remote no longer knows the task (`TaskNotFound`, JSON-RPC -32001): gone, whichever the version. */
export class TaskGoneError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'TaskGoneError'
  }
}

/** The JSON-RPC code of `TaskNotFound`, in both versions. */
const TASK_NOT_FOUND = -32001

/**
 * The remote answered a request of ours "task not found": the task is gone there. Either SDK's error,
 * ours, or one wrapping it as its cause (the 0.3 SDK wraps an error event of a stream).
 */
export function isTaskNotFound(error: unknown): boolean {
  for (let at = error, depth = 0; at && depth < 4; at = (at as { cause?: unknown }).cause, depth++) {
    if (at instanceof TaskGoneError || at instanceof TaskNotFoundError || at instanceof TaskNotFoundErrorV03) return true
    const { code, errorResponse } = at as { code?: unknown; errorResponse?: { error?: { code?: unknown } } }
    if (code === TASK_NOT_FOUND || errorResponse?.error?.code === TASK_NOT_FOUND) return true
  }
  return false
}

/** `getTask` that turns a not-found answer into a `TaskGoneError`. */
export async function gettingTask<T>(get: Promise<T>, isNotFound: (error: unknown) => boolean): Promise<T> {
  try {
    return await get
  } catch (error) {
    if (isNotFound(error) || (error as { code?: unknown } | undefined)?.code === TASK_NOT_FOUND) {
      throw new TaskGoneError(headChars(String((error as Error)?.message ?? error), 300), { cause: error })
    }
    throw error
  }
}

/** A2A 1.0 through the 1.x SDK's client. */
export function wireV1(client: Client): A2aWire {
  const params = (message: Outgoing, returnImmediately: boolean) => ({
    tenant: '',
    message: {
      messageId: randomUUID(),
      contextId: message.contextId ?? '',
      taskId: message.taskId ?? '',
      role: Role.ROLE_USER,
      parts: [{ content: { $case: 'text' as const, value: message.prompt }, mediaType: 'text/plain', filename: '', metadata: undefined }],
      metadata: message.metadata,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately },
    metadata: undefined,
  })
  return {
    stream: (message, options) => client.sendMessageStream(params(message, false), options)[Symbol.asyncIterator](),
    send: (message, options) => client.sendMessage(params(message, true), options),
    getTask: (id, options) => gettingTask(client.getTask({ tenant: '', id, historyLength: 0 }, options), (error) => error instanceof TaskNotFoundError),
    cancelTask: (id, options) => client.cancelTask({ tenant: '', id, metadata: undefined }, options),
  }
}

/** A send's answer: a task (it has a status), else a message. */
export function isTask(answer: Task | Message): answer is Task {
  return 'status' in answer && 'artifacts' in answer
}
