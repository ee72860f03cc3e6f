// Async helpers shared by every package's tests (test code only; never published).

export interface Deferred<T = void> {
  promise: Promise<T>
  resolve(value: T): void
  reject(reason: unknown): void
  settled: boolean
}

/** A promise the test settles by hand. */
export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void
  let reject!: (reason: unknown) => void
  const promise = new Promise<T>((res, rej) => { resolve = res; reject = rej })
  const result: Deferred<T> = {
    promise,
    settled: false,
    resolve: (value) => { result.settled = true; resolve(value) },
    reject: (reason) => { result.settled = true; reject(reason) },
  }
  return result
}

/** Lets pending promise chains settle: `times` macrotask hops, no timers left behind. */
export async function tick(times = 5): Promise<void> {
  for (let i = 0; i < times; i++) await new Promise<void>((resolve) => setImmediate(resolve))
}

/** Whether `promise` has settled once pending callbacks ran. */
export async function isSettled(promise: Promise<unknown>): Promise<boolean> {
  let settled = false
  promise.then(() => { settled = true }, () => { settled = true })
  await tick()
  return settled
}

/** Waits, macrotask by macrotask, until `check()` holds; throws after `limit` hops. */
export async function until(check: () => boolean, what = 'the condition held', limit = 2000): Promise<void> {
  for (let i = 0; i < limit; i++) {
    if (check()) return
    await new Promise<void>((resolve) => setImmediate(resolve))
  }
  throw new Error(`gave up waiting until ${what}`)
}
