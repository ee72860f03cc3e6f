import { randomUUID } from 'node:crypto'
import { type Artifact, type Message, type Part, Role, type StreamResponse, type Task, TaskState } from '@a2a-js/sdk'
import { type Client as ClientV03, TaskNotFoundError } from 'a2a-sdk-v03/client'
import { MAX_PARTS } from './task-view.js'
import { type A2aWire, gettingTask, type Outgoing } from './wire.js'

/**
 * A2A 0.2/0.3 through the 0.3 SDK's client (`message/stream`, `message/send`, `tasks/get`,
 * `tasks/cancel`; parts `{ kind: 'text' }`; states as lowercase strings). Answers are converted to
 * the 1.0 shapes, defensively: the 0.3 client hands over parsed JSON as the remote sent it.
 */
export function wireV03(client: ClientV03): A2aWire {
  const params = (message: Outgoing, blocking: boolean) => ({
    message: {
      kind: 'message' as const,
      messageId: randomUUID(),
      role: 'user' as const,
      parts: [{ kind: 'text' as const, text: message.prompt }],
      metadata: message.metadata,
      ...message.taskId ? { taskId: message.taskId } : {},
      ...message.contextId ? { contextId: message.contextId } : {},
    },
    configuration: { blocking },
  })
  return {
    stream(message, options) {
      const events = client.sendMessageStream(params(message, true), options)
      return {
        async next() {
          const next = await events.next()
          return next.done ? { done: true, value: undefined } : { done: false, value: eventOf(next.value) }
        },
        async return() {
          await events.return(undefined)
          return { done: true, value: undefined }
        },
      }
    },
    async send(message, options) {
      const answer = await client.sendMessage(params(message, false), options)
      const given = record(answer)
      return given.kind === 'message' || (given.kind === undefined && !given.status && Array.isArray(given.parts)) ? messageOf(given) : taskOf(given)
    },
    async getTask(id, options) {
      const task = await gettingTask(client.getTask({ id, historyLength: 0 }, options), (error) => error instanceof TaskNotFoundError)
      return taskOf(record(task))
    },
    cancelTask: async (id, options) => taskOf(record(await client.cancelTask({ id }, options))),
  }
}

const STATES: Record<string, TaskState> = {
  'submitted': TaskState.TASK_STATE_SUBMITTED,
  'working': TaskState.TASK_STATE_WORKING,
  'input-required': TaskState.TASK_STATE_INPUT_REQUIRED,
  'completed': TaskState.TASK_STATE_COMPLETED,
  'canceled': TaskState.TASK_STATE_CANCELED,
  'failed': TaskState.TASK_STATE_FAILED,
  'rejected': TaskState.TASK_STATE_REJECTED,
  'auth-required': TaskState.TASK_STATE_AUTH_REQUIRED,
}

/** A 0.3 state: its 1.0 equivalent; `unknown` and anything else ends the run as an unknown state. */
function stateOfV03(state: unknown): TaskState {
  return typeof state === 'string' && Object.hasOwn(STATES, state) ? STATES[state] : TaskState.UNRECOGNIZED
}

/**
 * One 0.3 stream event (`kind: task | message | status-update | artifact-update`) as a 1.0
 * StreamResponse. An event without `kind` that has an id and a status is a task: 0.2 servers
 * (VoltAgent's among them) stream whole task snapshots without it.
 */
function eventOf(raw: unknown): StreamResponse {
  const event = record(raw)
  const kind = event.kind ?? (typeof event.id === 'string' && event.status ? 'task' : undefined)
  switch (kind) {
    case 'task': return { payload: { $case: 'task', value: taskOf(event) } }
    case 'message': return { payload: { $case: 'message', value: messageOf(event) } }
    case 'status-update': return {
      payload: {
        $case: 'statusUpdate',
        value: {
          taskId: text(event.taskId), contextId: text(event.contextId),
          status: statusOf(event.status), metadata: metadataOf(event.metadata),
        },
      },
    }
    case 'artifact-update': return {
      payload: {
        $case: 'artifactUpdate',
        value: {
          taskId: text(event.taskId), contextId: text(event.contextId), artifact: artifactOf(event.artifact),
          append: event.append === true, lastChunk: event.lastChunk === true, metadata: metadataOf(event.metadata),
        },
      },
    }
    default: return { payload: undefined }
  }
}

function taskOf(task: Record<string, unknown>): Task {
  const artifacts = Array.isArray(task.artifacts) ? task.artifacts.map(artifactOf) : []
  return {
    id: text(task.id), contextId: text(task.contextId), status: statusOf(task.status),
    artifacts, history: [], metadata: metadataOf(task.metadata),
  }
}

function statusOf(raw: unknown): Task['status'] {
  const status = record(raw)
  return {
    state: stateOfV03(status.state), message: status.message ? messageOf(record(status.message)) : undefined,
    timestamp: typeof status.timestamp === 'string' ? status.timestamp.slice(0, 64) : undefined,
  }
}

function messageOf(message: Record<string, unknown>): Message {
  return {
    messageId: text(message.messageId), contextId: text(message.contextId), taskId: text(message.taskId),
    role: message.role === 'agent' ? Role.ROLE_AGENT : message.role === 'user' ? Role.ROLE_USER : Role.ROLE_UNSPECIFIED,
    parts: partsOf(message.parts), metadata: metadataOf(message.metadata), extensions: [], referenceTaskIds: [],
  }
}

function artifactOf(raw: unknown): Artifact {
  const artifact = record(raw)
  return {
    artifactId: text(artifact.artifactId), name: text(artifact.name), description: text(artifact.description),
    parts: partsOf(artifact.parts), metadata: metadataOf(artifact.metadata), extensions: [],
  }
}

/** 0.3 parts (`kind: text | data | file`) as 1.0 parts. */
function partsOf(raw: unknown): Part[] {
  if (!Array.isArray(raw)) return []
  const parts: Part[] = []
  for (const entry of raw.slice(0, MAX_PARTS)) {
    const part = record(entry)
    const base = { mediaType: '', filename: '', metadata: undefined }
    if (part.kind === 'text' && typeof part.text === 'string') parts.push({ ...base, content: { $case: 'text', value: part.text } })
    else if (part.kind === 'data') parts.push({ ...base, content: { $case: 'data', value: part.data as never } })
    else if (part.kind === 'file') {
      const file = record(part.file)
      const named = { ...base, filename: text(file.name), mediaType: text(file.mimeType) }
      if (typeof file.uri === 'string') parts.push({ ...named, content: { $case: 'url', value: file.uri } })
      else parts.push({ ...named, content: { $case: 'raw', value: Buffer.alloc(0) } })
    }
  }
  return parts
}

function metadataOf(raw: unknown): Record<string, unknown> | undefined {
  return raw && typeof raw === 'object' && !Array.isArray(raw) ? raw as Record<string, unknown> : undefined
}

function record(raw: unknown): Record<string, unknown> {
  return raw && typeof raw === 'object' && !Array.isArray(raw) ? raw as Record<string, unknown> : {}
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : ''
}
