import type { TaskStatus } from '@a2a-js/sdk'

/** How many ended tasks a host remembers the final state of. */
const REMEMBERED = 1024

/**
 * The final states of the tasks this host ended last. The SDK reads a task when a message for it arrives, then runs
 * the executor: a message read while the task still waited (input-required) can reach the executor after a cancel,
 * an expiry or another answer ended it. Such a message leaves the task as it ended instead of failing it again.
 */
export class EndedTasks {
  private readonly ends = new Map<string, TaskStatus>()

  remember(key: string, status: TaskStatus): void {
    this.ends.delete(key)
    this.ends.set(key, status)
    if (this.ends.size > REMEMBERED) this.ends.delete(this.ends.keys().next().value!)
  }

  get(key: string): TaskStatus | undefined {
    return this.ends.get(key)
  }
}
