/**
 * Section 1, one system in a process of its own (spawned by run.ts per system and run): no other
 * system's heap, JIT state or async hooks share the process. Prints its Stats as JSON on the last line.
 *   node --expose-gc --import tsx bench/fresh.ts <floor|spawn|fork|openai|aisdk> '{"rounds":25,"batch":100,"warmup":10}'
 */
import { Logger } from 'cordis'
import { interleave } from './lib.js'
import { buildSystem, OVERHEAD, type OverheadSystem } from './scenarios/overhead.js'

Logger.levels.base = 1
const key = process.argv[2] as OverheadSystem
if (!(key in OVERHEAD)) throw new Error(`fresh.ts: unknown system "${key}" (one of ${Object.keys(OVERHEAD).join(', ')})`)
const options = JSON.parse(process.argv[3] ?? '{}') as { rounds: number; batch: number; warmup: number }
const system = await buildSystem(key)
try {
  const stats = await interleave({ [OVERHEAD[key]]: system.run }, options)
  console.log(JSON.stringify(stats[OVERHEAD[key]]))
} finally {
  await system.stop()
}
