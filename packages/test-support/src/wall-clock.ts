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

/**
 * `body` (synchronous) with the wall clock steppable (`step`) and time passing on demand (`pass(ms)`: both clocks move on
 * by `ms`), so a minute goes by without being waited out. `performance.now()` is restored however `body` ends.
 */
export async function withClocks(body: (clock: { step(ms: number): void; pass(ms: number): void }) => void): Promise<void> {
  await withSteppedClock((step) => {
    const real = performance.now
    const own = Object.getOwnPropertyDescriptor(performance, 'now')
    let passed = 0
    performance.now = () => real.call(performance) + passed
    try {
      body({ step, pass: (ms) => { passed += ms; step(ms) } })
    } finally {
      if (own) Object.defineProperty(performance, 'now', own)
      else Reflect.deleteProperty(performance, 'now')
    }
  })
}
