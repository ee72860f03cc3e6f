/** Someone waiting FIFO for a slot of a gate. */
export interface Waiter<T> {
  grant(value: T): void
  fail(error: Error): void
}

/** One gate's count of slots in use and its FIFO queue. */
export interface Gate<W> {
  active: number
  queue: W[]
}

/**
 * Joins the end of `queue` with `fields` and waits: fulfils with what `grant` gives, rejects with
 * what `fail` gives, or, when `signal` aborts first, leaves the queue, calls `left`, and rejects
 * with `onAbort()`.
 */
export function waitInQueue<T, W extends Waiter<T>>(
  queue: W[], fields: Omit<W, keyof Waiter<T>>, signal: AbortSignal, onAbort: () => Error, left?: () => void,
): Promise<T> {
  // An abort that landed before this wait (e.g. between two gates) would never fire its event again.
  if (signal.aborted) {
    left?.()
    return Promise.reject(onAbort())
  }
  return new Promise<T>((resolve, reject) => {
    const abort = () => {
      const index = queue.indexOf(waiter)
      if (index >= 0) queue.splice(index, 1)
      left?.()
      reject(onAbort())
    }
    const waiter = {
      ...fields,
      grant: (value: T) => {
        signal.removeEventListener('abort', abort)
        resolve(value)
      },
      fail: (error: Error) => {
        signal.removeEventListener('abort', abort)
        reject(error)
      },
    } as W
    signal.addEventListener('abort', abort, { once: true })
    queue.push(waiter)
  })
}
