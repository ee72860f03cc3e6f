import type { ExecutionEventBus, ServerCallContext } from '@a2a-js/sdk/server'
import type { Agent } from '@cordis-subagents/agent'
import type { Crossing, PendingQuestion } from '@cordis-subagents/shared'

/** A task whose agent's turn is parked on a question: the task is input-required, the agent waits in memory. */
export interface ParkedTask {
  /** The store key (tenant, credential, task id). */
  key: string
  taskId: string
  contextId: string
  agent: Agent
  question: PendingQuestion
  /** The task's event bus, which the SDK keeps alive while the task is input-required (a cancel arrives on it). */
  bus: ExecutionEventBus
  /** The call context the task was started under (its credential), for the cancel an expiry sends. */
  context: ServerCallContext
  /** The crossing the task runs under (saved with its turn, so another host can rebuild its agent). */
  crossing: Crossing
  /** Set when `parkedTimeout` passed: the cancel that follows says so. */
  expired?: boolean
}

/**
 * The parked tasks of one server, bounded: at most `max` wait at once (a turn that would park past
 * it is refused by the executor), and each waits at most `timeout` ms (0: no limit) before
 * `expire` is called for it (the server cancels the task). No other timer runs for a parked task.
 */
export class ParkedTasks {
  private readonly byKey = new Map<string, { task: ParkedTask; timer?: NodeJS.Timeout }>()

  constructor(private readonly options: { max: number; timeout: number; expire: (task: ParkedTask) => void }) {}

  get size(): number {
    return this.byKey.size
  }

  get max(): number {
    return this.options.max
  }

  has(key: string): boolean {
    return this.byKey.has(key)
  }

  /** Parks `task`; false when `max` tasks already wait (nothing is kept). */
  add(task: ParkedTask): boolean {
    if (this.byKey.size >= this.options.max && !this.byKey.has(task.key)) return false
    this.take(task.key)
    const { timeout } = this.options
    const timer = timeout ? setTimeout(() => {
      task.expired = true
      this.options.expire(task)
    }, timeout) : undefined
    timer?.unref?.()
    this.byKey.set(task.key, { task, timer })
    return true
  }

  /** Takes the task under `key` out (an answer or a cancel came): its timer stops. */
  take(key: string): ParkedTask | undefined {
    const entry = this.byKey.get(key)
    if (!entry) return undefined
    clearTimeout(entry.timer)
    this.byKey.delete(key)
    return entry.task
  }

  /** Takes out the task waiting on `bus` (a cancel names the bus, not the key). At most `max` entries are scanned. */
  takeByBus(bus: ExecutionEventBus): ParkedTask | undefined {
    for (const { task } of this.byKey.values()) {
      if (task.bus === bus) return this.take(task.key)
    }
    return undefined
  }

  /** Takes every parked task out (the server stops). */
  drain(): ParkedTask[] {
    return [...this.byKey.keys()].map((key) => this.take(key)!)
  }
}
