import type {
  CancelTaskRequest, GetTaskRequest, Message, SendMessageRequest, StreamResponse, SubscribeToTaskRequest, Task, TaskArtifactUpdateEvent,
  TaskStatusUpdateEvent,
} from '@a2a-js/sdk'
import { TaskNotCancelableError, UnsupportedOperationError } from '@a2a-js/sdk/errors'
import type { AgentExecutor, ServerCallContext } from '@a2a-js/sdk/server'
import type { AgentCard } from '@a2a-js/sdk'
import type { LocalBuses } from './local-buses.js'
import { canceledTask } from './lost-tasks.js'
import type { PostgresTurns, SavedTurn } from './saved-turns.js'
import { FINAL_STATES, RUNNING_STATES, STATE } from './shared-schema.js'
import { keyOfRef, type PostgresTaskStore, refOf } from './shared-store.js'
import type { TaskRef } from './task-ref.js'
import type { TaskFeed, TaskWatch } from './task-feed.js'
import { type HandlerExtras, TaskRequestHandler } from './task-handler.js'

/** What the handler asks of the executor when a task moves between hosts. */
export interface TakeOver {
  adopt(key: string, saved: SavedTurn): void
  forget(key: string): SavedTurn | undefined
  release(key: string, taskId: string, context: ServerCallContext | undefined): void
}

interface SharedParts {
  store: PostgresTaskStore
  buses: LocalBuses
  feed: TaskFeed
  cancelWaitMs: number
  turns: PostgresTurns
  executor: TakeOver
  /** Acts for the task if its owner's lease is gone (interrupts, fails or expires it: see HostLease.reap). */
  actForGone(ref: TaskRef): Promise<void>
}

/**
 * The SDK's request handler, for a task that runs on another host behind the same load balancer:
 * - cancel is forwarded to the host running it (over the feed), and answered once that host has
 *   ended the task (or not within `cancelWaitMs`: not cancelable, saying why);
 * - resubscribe follows the task in the shared store, woken by the feed: the task, then its
 *   artifact and status changes, until a final state or one waiting for a message (a question,
 *   or `interrupted`: its host died);
 * - a message on a task waiting for one (input-required: a question, or a turn its dead host
 *   lost) claims it: the task moves here, its saved agent is rebuilt and goes on (the host that
 *   held it lets it go); a message on a task running on a host that died interrupts it first;
 * - GetTask of a task running elsewhere checks that its host is alive, so a client whose stream
 *   broke learns at once that the task was interrupted.
 * A task running here, unknown, or already final goes to the SDK's own handling.
 */
export class SharedRequestHandler extends TaskRequestHandler {
  constructor(
    card: AgentCard, executor: AgentExecutor, maxFollowUpsPerTask: number,
    private readonly shared: SharedParts, extras: HandlerExtras = {},
  ) {
    super(card, shared.store, executor, shared.buses, maxFollowUpsPerTask, extras)
  }

  override async sendMessage(params: SendMessageRequest, context: ServerCallContext): Promise<Message | Task> {
    const key = await this.claim(params, context)
    try {
      return await super.sendMessage(params, context)
    } finally {
      if (key) await this.unclaim(key, params, context)
    }
  }

  override async *sendMessageStream(params: SendMessageRequest, context: ServerCallContext): AsyncGenerator<StreamResponse> {
    const key = await this.claim(params, context)
    try {
      return yield* super.sendMessageStream(params, context)
    } finally {
      if (key) await this.unclaim(key, params, context)
    }
  }

  /** A claimed turn the request never ran (it failed first) goes back to the store, so the task can still be continued. */
  private async unclaim(key: string, params: SendMessageRequest, context: ServerCallContext): Promise<void> {
    const left = this.shared.executor.forget(key)
    if (left) await this.shared.turns.save(params.message!.taskId, context, left).catch(() => {})
  }

  override async getTask(params: GetTaskRequest, context: ServerCallContext): Promise<Task> {
    const task = await super.getTask(params, context)
    if (!isRunning(task) || this.shared.buses.getByTaskId(params.id, context)) return task
    await this.shared.actForGone(refOf(context, params.id))
    return super.getTask(params, context)
  }

  /**
   * A message on an unfinished task of this deployment. Running here: the SDK's (the message
   * follows the running turn). Running on a live host: refused, naming it. Running on a dead host:
   * interrupted first. Waiting (input-required): claimed for this host (see `PostgresTurns.claim`);
   * the claimed turn is handed to the executor under the returned key.
   */
  private async claim(params: SendMessageRequest, context: ServerCallContext): Promise<string | undefined> {
    const id = params.message?.taskId
    if (!id) return undefined
    const ref = refOf(context, id)
    const local = this.shared.buses.getByTaskId(id, context)
    let task = await this.shared.store.load(id, context)
    if (!task || isFinal(task) || (local && isRunning(task))) return undefined
    if (isRunning(task)) {
      await this.shared.actForGone(ref)
      task = await this.shared.store.load(id, context)
      if (!task || isFinal(task)) return undefined
      if (isRunning(task)) {
        const host = await this.shared.store.ownerName(id, context)
        throw new UnsupportedOperationError(`Task ${id} is running on host ${host ?? 'unknown'}; a message cannot join a turn on another host. `
          + 'Follow it (SubscribeToTask, on any host) and send the message once it waits for one.')
      }
    }
    const key = keyOfRef(ref)
    const { claimed, saved } = await this.shared.turns.claim(ref)
    if (!claimed) {
      if (local) this.shared.executor.release(key, id, context)
      throw new UnsupportedOperationError(`Task ${id} was just continued by another message (through another host); `
        + 'follow it (SubscribeToTask) and send the message once it waits again.')
    }
    if (saved) this.shared.executor.adopt(key, saved)
    return key
  }

  override async cancelTask(params: CancelTaskRequest, context: ServerCallContext): Promise<Task> {
    const task = this.shared.buses.getByTaskId(params.id, context) ? undefined : await this.shared.store.load(params.id, context)
    if (!task || isFinal(task)) return super.cancelTask(params, context)
    const ref = refOf(context, params.id)
    // Waiting for a message (its host may be dead, or it is interrupted): claimed here and canceled in the store.
    const claim = isWaiting(task) ? await this.shared.turns.claim(ref) : undefined
    if (claim?.claimed) {
      const canceled = canceledTask(task)
      try {
        await this.shared.store.save(canceled, context)
      } catch (error) {
        // Not canceled after all: the turn it took goes back, so an answer can still continue the task.
        if (claim.saved) await this.shared.turns.save(params.id, context, claim.saved).catch(() => {})
        throw error
      }
      return canceled
    }
    const watch = this.watch(params.id, context)
    let timer: NodeJS.Timeout | undefined
    try {
      await this.shared.feed.requestCancel(ref)
      const timedOut = new Promise<false>((resolve) => { timer = setTimeout(() => resolve(false), this.shared.cancelWaitMs) })
      const load = () => this.shared.store.load(params.id, context)
      let latest = await load()
      while (latest && !isFinal(latest) && await Promise.race([watch.changed(), timedOut])) latest = await load()
      if (latest?.status?.state === STATE.CANCELED) return latest
      throw new TaskNotCancelableError(latest && isFinal(latest)
        ? `Task not cancelable: ${params.id} ended (state ${latest.status?.state}) before the cancel reached it.`
        : `Task not cancelable now: the host running ${params.id} did not confirm the cancel within ${this.shared.cancelWaitMs} ms. If it died, the task is interrupted (GetTask shows it) and can be canceled then; else try again.`)
    } finally {
      clearTimeout(timer)
      watch.close()
    }
  }

  override async *resubscribe(params: SubscribeToTaskRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    if (this.shared.buses.getByTaskId(params.id, context)) return yield* super.resubscribe(params, context)
    // Watch before reading, so no change between the read and the watch is missed.
    const watch = this.watch(params.id, context)
    try {
      let last = await this.shared.store.load(params.id, context)
      if (last && isRunning(last)) {
        // Its host may be dead: then the follower sees the task interrupted now, not at the next reap.
        await this.shared.actForGone(refOf(context, params.id))
        last = await this.shared.store.load(params.id, context)
      }
      if (!last || isFinal(last)) return yield* super.resubscribe(params, context)
      yield { payload: { $case: 'task', value: last } }
      // A stream ends where the task waits for a message, as a local one does.
      if (isWaiting(last)) return
      while (await watch.changed()) {
        const now = await this.shared.store.load(params.id, context)
        if (!now) return
        for (const event of changes(last, now)) yield event
        last = now
        if (isFinal(now) || isWaiting(now)) return
      }
    } finally {
      watch.close()
    }
  }

  private watch(id: string, context: ServerCallContext): TaskWatch {
    const watch = this.shared.feed.watch(refOf(context, id))
    if (!watch) throw new TaskNotCancelableError(`This host follows too many tasks of other hosts now; retry the request (another host may take it).`)
    return watch
  }
}

function isFinal(task: Task): boolean {
  return (FINAL_STATES as readonly number[]).includes(task.status?.state ?? 0)
}

function isWaiting(task: Task): boolean {
  return task.status?.state === STATE.INPUT_REQUIRED
}

function isRunning(task: Task): boolean {
  return (RUNNING_STATES as readonly number[]).includes(task.status?.state ?? 0)
}

/** What changed from `before` to `after`, as the events a local subscriber would have seen: artifacts first, then the status. */
function changes(before: Task, after: Task): StreamResponse[] {
  const events: StreamResponse[] = []
  const known = new Map((before.artifacts ?? []).map((artifact) => [artifact.artifactId, JSON.stringify(artifact)]))
  for (const artifact of after.artifacts ?? []) {
    if (known.get(artifact.artifactId) === JSON.stringify(artifact)) continue
    const value: TaskArtifactUpdateEvent = {
      taskId: after.id, contextId: after.contextId, artifact, append: false, lastChunk: true, metadata: undefined,
    }
    events.push({ payload: { $case: 'artifactUpdate', value } })
  }
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)
  if (!same(before.status, after.status) || !same(before.metadata, after.metadata)) {
    const value: TaskStatusUpdateEvent = { taskId: after.id, contextId: after.contextId, status: after.status, metadata: after.metadata }
    events.push({ payload: { $case: 'statusUpdate', value } })
  }
  return events
}
