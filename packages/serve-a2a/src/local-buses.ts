import type { ExecutionEventBus, ExecutionEventBusManager, ServerCallContext } from '@a2a-js/sdk/server'
import { digestOfRef } from './feed-payloads.js'
import { refOf } from './shared-store.js'
import { TaskBuses } from './task-buses.js'
import { taskKey } from './task-store.js'

/**
 * The SDK's event buses of the tasks executing on this host, with which ones they are: a task with
 * a bus here runs (or waits for input) here; any other is another host's. Delegates to the SDK's
 * own manager. Each is also found by its digest (the name the feed gives a task: feed-payloads.ts).
 */
export class LocalBuses implements ExecutionEventBusManager {
  private readonly inner = new TaskBuses()
  private readonly live = new Map<string, { taskId: string; context: ServerCallContext | undefined; digest: string }>()
  /** Digest → key of every task in `live`. */
  private readonly digests = new Map<string, string>()

  createOrGetByTaskId(taskId: string, context?: ServerCallContext): ExecutionEventBus {
    const key = taskKey(context, taskId)
    const digest = this.live.get(key)?.digest ?? digestOfRef(refOf(context, taskId))
    this.live.set(key, { taskId, context, digest })
    this.digests.set(digest, key)
    return this.inner.createOrGetByTaskId(taskId, context)
  }

  getByTaskId(taskId: string, context?: ServerCallContext): ExecutionEventBus | undefined {
    return this.inner.getByTaskId(taskId, context)
  }

  cleanupByTaskId(taskId: string, context?: ServerCallContext): void {
    const key = taskKey(context, taskId)
    const digest = this.live.get(key)?.digest
    if (digest) this.digests.delete(digest)
    this.live.delete(key)
    this.inner.cleanupByTaskId(taskId, context)
  }

  has(key: string): boolean {
    return this.live.has(key)
  }

  /** The task under `key` with the context it was started with, when it runs here. */
  get(key: string): { taskId: string; context: ServerCallContext | undefined } | undefined {
    return this.live.get(key)
  }

  /** The task here whose digest is `digest` (its key, id and context), if one is. */
  byDigest(digest: string): { key: string; taskId: string; context: ServerCallContext | undefined } | undefined {
    const key = this.digests.get(digest)
    const local = key === undefined ? undefined : this.live.get(key)
    return local && { key: key!, taskId: local.taskId, context: local.context }
  }

  keys(): string[] {
    return [...this.live.keys()]
  }
}
