import { randomUUID } from 'node:crypto'
import type { Task } from '@a2a-js/sdk'
import { CROSSING_KEY, isRecord } from '@cordis-subagents/shared'
import { STATE } from './shared-schema.js'

/** Code in the status metadata of a task whose host was lost (failed, or interrupted when it can go on). */
const HOST_LOST = 'HOST_LOST'
/** Code of a task whose run ended on its host but whose final state was never saved. */
const STATE_LOST = 'STATE_LOST'

/** `<hostName>` of a lease id `<hostName>#<8 hex>`. */
function hostOf(owner: string | null | undefined): string | undefined {
  return owner ? owner.slice(0, owner.lastIndexOf('#')) || owner : undefined
}

/** The task, failed: its host is gone, and with it the run, and nothing was saved to go on from. */
export function lostTask(task: Task, owner: string | null): Task {
  const host = hostOf(owner)
  const text = host
    ? `The host ${host} that ran this task stopped renewing its lease (it died, hung or lost the database) before the task ended, and no turn of it was saved to continue from. Send it again.`
    : 'No host took this task within a lease (it was never started). Send it again.'
  return withStatus(task, STATE.FAILED, text, { stopReason: 'error', code: HOST_LOST, ...host ? { host } : {} })
}

/**
 * The task, interrupted: its host died mid-turn. The turn in flight is lost; its saved start (the
 * agent's completed turns and the turn's input) stays, so the task waits (input-required, stop
 * reason `interrupted`) for a message through any host, which runs that turn again with it.
 */
export function interruptedTask(task: Task, owner: string | null): Task {
  const host = hostOf(owner) ?? 'unknown'
  const text = `The host ${host} that ran this task died mid-turn; the turn in flight was lost (the task keeps everything up to its `
    + 'last completed turn). Send a message on this task to continue it: any host takes it over and runs the lost turn again, then reads your message.'
  return withStatus(task, STATE.INPUT_REQUIRED, text, { stopReason: 'interrupted', code: HOST_LOST, host })
}

/** The task, working again: its host was paused past its lease (a reaper marked it interrupted), went on, and runs the turn on. */
export function resumedTask(task: Task, host: string): Task {
  const text = `The host ${host} that runs this task was paused past its lease and went on; no other host had taken the task, so its turn runs on there.`
  return withStatus(task, STATE.WORKING, text, { stopReason: undefined, code: undefined, host: undefined })
}

/** The task, canceled: it waited for an answer on a host that died, and no answer came within `parkedTimeout`. */
export function expiredTask(task: Task, owner: string | null, timeout: number): Task {
  const host = hostOf(owner) ?? 'unknown'
  const text = `Cancelled while waiting for an answer: no answer came within ${timeout} ms (parkedTimeout); its host ${host} had died meanwhile.`
  return withStatus(task, STATE.CANCELED, text, { stopReason: 'aborted', host })
}

/** The task, canceled by its client while it waited for a message (its agent, if any, is let go). */
export function canceledTask(task: Task): Task {
  return withStatus(task, STATE.CANCELED, 'Cancelled while waiting for a message: cancelled by the client (CancelTask).', { stopReason: 'aborted' })
}

/** The task, failed: its run ended on its host, but the end was never saved (a database error then). */
export function endedTask(task: Task, host: string): Task {
  const text = `The host ${host} ran this task, but its final state could not be saved (the database failed then), so how it ended is unknown. Send it again if you need its answer.`
  return withStatus(task, STATE.FAILED, text, { stopReason: 'error', code: STATE_LOST, host })
}

function withStatus(task: Task, state: number, text: string, ours: Record<string, unknown>): Task {
  task.status = {
    state,
    timestamp: new Date().toISOString(),
    message: {
      messageId: randomUUID(), contextId: task.contextId, taskId: task.id, role: 2 /* ROLE_AGENT */,
      parts: [{ content: { $case: 'text', value: text }, mediaType: 'text/plain', filename: '', metadata: undefined }],
      metadata: undefined, extensions: [], referenceTaskIds: [],
    },
  }
  const before = task.metadata?.[CROSSING_KEY]
  task.metadata = { ...task.metadata, [CROSSING_KEY]: { ...isRecord(before) ? before : {}, ...ours } }
  task.history = [...task.history ?? [], task.status.message!]
  return task
}

