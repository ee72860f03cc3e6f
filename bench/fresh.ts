/**
 * Section 1, one system in a process of its own (spawned by run.ts per system, pair and run): no
 * other system's heap, JIT state or async hooks share the process. It runs a start-up window of
 * `startup` rounds right after the system is built, then a steady window of `steady` rounds
 * (steady.ts); targets use the steady window, the start-up window is reported apart. Prints its
 * FreshSample as JSON on the last line.
 *   node --expose-gc --import tsx bench/fresh.ts <floor|spawn|fork|openai|aisdk> '{"startup":200,"steady":200,"batch":10}'
 */
import { performance } from 'node:perf_hooks'
import { Logger } from 'cordis'
import { rounds } from './paired.js'
import type { FreshSample } from './fresh-report.js'
import { buildSystem, OVERHEAD, type OverheadSystem } from './scenarios/overhead.js'
import { splitWindows } from './steady.js'

Logger.levels.base = 1
const key = process.argv[2] as OverheadSystem
if (!(key in OVERHEAD)) throw new Error(`fresh.ts: unknown system "${key}" (one of ${Object.keys(OVERHEAD).join(', ')})`)
const options = JSON.parse(process.argv[3] ?? '{}') as { startup: number; steady: number; batch: number }
const t0 = performance.now()
const system = await buildSystem(key)
const buildMs = performance.now() - t0
try {
  // No untimed warm-up: the start-up window is the warm-up, measured.
  const measured = (await rounds({ [key]: system.run }, { rounds: options.startup + options.steady, warmup: 0, batch: options.batch }))[key]
  const sample: FreshSample = {
    buildMs,
    cpu: splitWindows(measured.cpu, options.startup),
    wall: splitWindows(measured.wall, options.startup),
    gcShare: measured.gcMs / (measured.timedMs || 1),
  }
  console.log(JSON.stringify(sample))
} finally {
  await system.stop()
}
