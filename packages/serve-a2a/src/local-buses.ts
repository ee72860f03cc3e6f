import {
  DefaultExecutionEventBusManager, type ExecutionEventBus, type ExecutionEventBusManager, type ServerCallContext,
} from '@a2a-js/sdk/server'
import { taskKey } from './task-store.js'

/**
 * The SDK's event buses of the tasks executing on this host, with which ones they are: a task with
 * a bus here runs (or waits for input) here; any other is another host's. Delegates to the SDK's
 * own manager.
 */
export class LocalBuses implements ExecutionEventBusManager {
  private readonly inner = new DefaultExecutionEventBusManager()
  private readonly live = new Map<string, { taskId: string; context: ServerCallContext | undefined }>()

  createOrGetByTaskId(taskId: string, context?: ServerCallContext): ExecutionEventBus {
    this.live.set(taskKey(context, taskId), { taskId, context })
    return this.inner.createOrGetByTaskId(taskId, context)
  }

  getByTaskId(taskId: string, context?: ServerCallContext): ExecutionEventBus | undefined {
    return this.inner.getByTaskId(taskId, context)
  }

  cleanupByTaskId(taskId: string, context?: ServerCallContext): void {
    this.live.delete(taskKey(context, taskId))
    this.inner.cleanupByTaskId(taskId, context)
  }

  has(key: string): boolean {
    return this.live.has(key)
  }

  /** The task under `key` with the context it was started with, when it runs here. */
  get(key: string): { taskId: string; context: ServerCallContext | undefined } | undefined {
    return this.live.get(key)
  }

  keys(): string[] {
    return [...this.live.keys()]
  }
}
