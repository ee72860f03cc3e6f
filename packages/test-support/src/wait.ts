// Bounded waits for tests: poll a condition until it holds, and fail naming what never happened.
// A bound, not a measurement: the limit only ends a wait that would otherwise hang.

export interface PollOptions {
  /** Most milliseconds to wait (10 s unless given). */
  timeout?: number
  /** Milliseconds between two checks (10 unless given). */
  every?: number
}

/**
 * Polls `check` until it gives a truthy value, and returns that value; throws `<what>: not within
 * <timeout> ms` once the bound passed. `options` may be the timeout alone.
 */
export async function eventually<T>(
  check: () => T | Promise<T>, what: string, options: PollOptions | number = {},
): Promise<NonNullable<T>> {
  const { timeout = 10_000, every = 10 } = typeof options === 'number' ? { timeout: options } : options
  const deadline = performance.now() + timeout
  for (;;) {
    const value = await check()
    if (value) return value as NonNullable<T>
    if (performance.now() > deadline) throw new Error(`${what}: not within ${timeout} ms`)
    await new Promise((resolve) => setTimeout(resolve, every))
  }
}

/** `promise`, or a failure naming `what` if it has not settled within `ms` (it hung). */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([promise, new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms)
    })])
  } finally {
    clearTimeout(timer)
  }
}
