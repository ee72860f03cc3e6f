/**
 * How many children one parent may have live at once: a FIFO gate per parent object (not its id:
 * ids may repeat across agent runtimes). A slot is held from admission until the run is disposed.
 */
interface Waiter {
  grant(): void
  fail(error: Error): void
}

interface Gate {
  /** Slots held: granted starts plus handed-over runs not yet disposed. */
  active: number
  queue: Waiter[]
}

export class ParentGates {
  private readonly gates = new Map<object, Gate>()

  /** Resolves once `key` has a free slot (FIFO); rejects with `onAbort()` when `signal` aborts first. */
  acquire(key: object, limit: number, signal: AbortSignal, onAbort: () => Error): Promise<void> {
    let gate = this.gates.get(key)
    if (!gate) this.gates.set(key, gate = { active: 0, queue: [] })
    if (gate.active < limit && !gate.queue.length) {
      gate.active++
      return Promise.resolve()
    }
    const queue = gate.queue
    return new Promise<void>((resolve, reject) => {
      const abort = () => {
        const index = queue.indexOf(waiter)
        if (index >= 0) queue.splice(index, 1)
        reject(onAbort())
      }
      const waiter: Waiter = {
        grant: () => {
          signal.removeEventListener('abort', abort)
          resolve()
        },
        fail: (error) => {
          signal.removeEventListener('abort', abort)
          reject(error)
        },
      }
      signal.addEventListener('abort', abort, { once: true })
      queue.push(waiter)
    })
  }

  /** Frees a slot of `key`, handing it straight to the oldest waiter (FIFO, no barging). */
  release(key: object): void {
    const gate = this.gates.get(key)
    if (!gate) return
    const next = gate.queue.shift()
    if (next) return next.grant()
    gate.active--
    if (gate.active <= 0 && !gate.queue.length) this.gates.delete(key)
  }

  /** Rejects every waiter (the service stopped). */
  failAll(error: () => Error): void {
    for (const gate of this.gates.values()) {
      for (const waiter of gate.queue.splice(0)) waiter.fail(error())
    }
  }
}
