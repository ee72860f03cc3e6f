/**
 * Interleaved measurement in pairs: each round runs a batch of every system, the order
 * alternating, and records each batch's wall-clock and CPU time per iteration. A round is a pair
 * (or tuple): samples of the same round are taken under the same conditions, so their ratio is
 * a paired ratio (stats.ts).
 */
import { performance, PerformanceObserver } from 'node:perf_hooks'
import { cpuUsage } from 'node:process'

/** One system's samples, one per round: µs per iteration by the wall clock and by the process' CPU time (user + system). */
export interface RoundSamples { wall: number[]; cpu: number[]; gcMs: number; timedMs: number }

export async function rounds(
  systems: Record<string, () => Promise<void>>,
  options: { rounds: number; warmup: number; batch: number },
): Promise<Record<string, RoundSamples>> {
  const names = Object.keys(systems)
  const out: Record<string, RoundSamples> = Object.fromEntries(names.map((n) => [n, { wall: [], cpu: [], gcMs: 0, timedMs: 0 }]))
  const windows: Array<{ name: string; from: number; to: number }> = []
  const pauses: Array<{ at: number; ms: number }> = []
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) pauses.push({ at: entry.startTime, ms: entry.duration })
  })
  observer.observe({ entryTypes: ['gc'] })
  try {
    for (let round = -options.warmup; round < options.rounds; round++) {
      // Alternate the order each round so no system always runs right after the same one.
      const order = round % 2 ? [...names].reverse() : names
      for (const name of order) {
        const run = systems[name]
        const c0 = cpuUsage()
        const t0 = performance.now()
        for (let i = 0; i < options.batch; i++) await run()
        const t1 = performance.now()
        const c1 = cpuUsage(c0)
        if (round < 0) continue
        out[name].wall.push(((t1 - t0) * 1000) / options.batch)
        out[name].cpu.push((c1.user + c1.system) / options.batch)
        windows.push({ name, from: t0, to: t1 })
      }
    }
    // GC entries are delivered asynchronously: let the last ones arrive.
    await new Promise((resolve) => setTimeout(resolve, 20))
  } finally {
    observer.disconnect()
  }
  for (const w of windows) out[w.name].timedMs += w.to - w.from
  for (const pause of pauses) {
    const w = windows.find((w) => pause.at >= w.from && pause.at < w.to)
    if (w) out[w.name].gcMs += pause.ms
  }
  return out
}
