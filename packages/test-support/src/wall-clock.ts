/**
 * The operating system's wall clock stepped (an NTP correction, a VM resumed, `date -s`) while `body` runs: `Date.now()`
 * reads `step(ms)` further on (or back, for a negative `ms`), while `performance.now()` and Node's timers, which are
 * monotonic, run on as before. Restored when `body` settles, however it ends.
 */
export async function withSteppedClock<T>(body: (step: (ms: number) => void) => Promise<T> | T): Promise<T> {
  const real = Date.now
  let offset = 0
  Date.now = () => real.call(Date) + offset
  try {
    return await body((ms) => { offset += ms })
  } finally {
    Date.now = real
  }
}
