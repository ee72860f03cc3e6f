import { setMaxListeners } from 'node:events'
import { type SendMessageRequest, TaskState } from '@a2a-js/sdk'
import { RequestMalformedError, UnsupportedOperationError } from '@a2a-js/sdk/errors'
import type { AgentExecutionEvent, ExecutionEventBus, ExecutionEventBusManager, ServerCallContext } from '@a2a-js/sdk/server'
import { taskKey } from './task-store.js'

/** Most `referenceTaskIds` one message may carry; more are refused (TOO_MANY_REFERENCES). */
const MAX_REFERENCE_TASK_IDS = 16

/** States that end a turn: every message that waited on it stops following it there. */
const TURN_ENDS: readonly number[] = [
  TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED,
  TaskState.TASK_STATE_INPUT_REQUIRED,
]

/** One admitted message on a known task: `settled` once its call is over (`returned`: with a result). */
export interface FollowUp {
  settled(returned: boolean): void
}

/**
 * The messages on known tasks in flight, per task (credential scope and id): an answer, or
 * messages sent while a turn runs. Each follows the task's events until its turn ends, and the SDK
 * loads and saves the task once per event for each of them: `max` bounds that fan-out. A message
 * holds its place until its call is over and, when the call returned at once (`returnImmediately`)
 * on a task with a live bus, until the turn it joined ends (a final or input-required status, or
 * the bus ends).
 */
export class FollowUps {
  private readonly counts = new Map<string, number>()

  constructor(private readonly buses: ExecutionEventBusManager, private readonly max: number) {}

  /** Messages in flight on tasks now (all tasks). */
  get size(): number {
    let total = 0
    for (const count of this.counts.values()) total += count
    return total
  }

  /**
   * Checks a message before the SDK sees it: at most MAX_REFERENCE_TASK_IDS references (kept
   * unique), and a place among the task's `max` messages in flight; throws an A2A error otherwise.
   */
  enter(params: SendMessageRequest, context: ServerCallContext): FollowUp {
    const message = params.message
    const references = message?.referenceTaskIds ?? []
    if (references.length > MAX_REFERENCE_TASK_IDS) {
      throw new RequestMalformedError({
        message: `A message may reference at most ${MAX_REFERENCE_TASK_IDS} tasks (referenceTaskIds); this one references ${references.length}. Send fewer.`,
        metadata: { code: 'TOO_MANY_REFERENCES' },
      })
    }
    const taskId = message?.taskId
    if (!taskId) return { settled: () => {} }
    const key = taskKey(context, taskId)
    const count = this.counts.get(key) ?? 0
    if (count >= this.max) {
      throw new UnsupportedOperationError({
        message: `Task ${taskId} already has ${count} messages waiting for its turn to end (maxFollowUpsPerTask: ${this.max}). `
          + 'Follow it (SubscribeToTask) and send the message once the turn has ended.',
        metadata: { code: 'TOO_MANY_FOLLOW_UPS' },
      })
    }
    this.counts.set(key, count + 1)
    return this.place(key, this.buses.getByTaskId(taskId, context))
  }

  /** The place of one message: freed once its call is over and (after an early return) its turn has ended. */
  private place(key: string, bus: ExecutionEventBus | undefined): FollowUp {
    let freed = false
    let ended = !bus
    let settled: boolean | undefined
    const free = () => {
      if (freed) return
      freed = true
      bus?.off('event', onEvent)
      bus?.off('finished', onEnd)
      const left = (this.counts.get(key) ?? 1) - 1
      if (left > 0) this.counts.set(key, left)
      else this.counts.delete(key)
    }
    const onEnd = () => {
      ended = true
      if (settled !== undefined) free()
    }
    const onEvent = (event: AgentExecutionEvent) => {
      if (event.kind === 'statusUpdate' && TURN_ENDS.includes(event.data.status?.state ?? -1)) onEnd()
    }
    if (bus) {
      // Each message in flight has the SDK's listeners and these on the bus: bounded by `max`, so not a leak.
      if (bus instanceof EventTarget) setMaxListeners(4 * this.max + 16, bus)
      bus.on('event', onEvent)
      bus.on('finished', onEnd)
    }
    return {
      settled: (returned) => {
        settled = returned
        // A call that failed never joined the turn; one that returned with the turn still running keeps its place.
        if (!returned || ended) free()
      },
    }
  }
}

/** The request without its references: this agent does not read referenced tasks, so the SDK must not load them. */
export function withoutReferences(params: SendMessageRequest): SendMessageRequest {
  if (!params.message?.referenceTaskIds?.length) return params
  return { ...params, message: { ...params.message, referenceTaskIds: [] } }
}
