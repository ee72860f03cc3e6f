// Async helpers shared by every package's tests (test code only; never published).

import { eventually as poll } from '@cordis-subagents/test-support'

export { type Deferred, deferred } from '@cordis-subagents/shared'

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

/** Polls `check` every 50 ms until it gives a truthy value, and returns it; throws after `ms` (30 s: waits across hosts). */
export function eventually<T>(check: () => T | Promise<T>, what: string, ms = 30_000): Promise<NonNullable<T>> {
  return poll(check, what, { timeout: ms, every: 50 })
}
