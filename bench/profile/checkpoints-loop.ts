/**
 * Where a checkpointed delegation's main-thread time goes (issue 42 item 1), not part of `npm run bench`:
 * one system of section 11 at a time (`none`, `sqlite` or `postgres`, seeded with CHECKPOINTS_RUNS runs),
 * warmed up, then CHECKPOINTS_LOOPS delegations (default 20,000) in rounds of 100 with the store's writes
 * flushed after each round, as the section does; only that loop is profiled (the inspector's CPU profiler,
 * 50 µs sampling), so start-up and seeding are left out. Writes FILE.cpuprofile; read it with summarize.ts.
 *
 *   CHECKPOINTS_PG_URL=postgres://… node --expose-gc --import tsx --conditions=cordis-subagents-source \
 *     bench/profile/checkpoints-loop.ts sqlite /tmp/sqlite.cpuprofile
 */
import { rmSync, writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { system } from '../scenarios/checkpoints.js'

const [store = 'sqlite', file] = process.argv.slice(2) as ['none' | 'sqlite' | 'postgres', string | undefined]
const loops = Number(process.env.CHECKPOINTS_LOOPS ?? 20_000)
const s = await system(store, {
  stores: [], storedRuns: Number(process.env.CHECKPOINTS_RUNS ?? 1000), rounds: 0, batch: 100, warmup: 0,
  pgUrl: process.env.CHECKPOINTS_PG_URL,
})
const loop = async (count: number) => {
  for (let i = 0; i < count; i += 100) {
    for (let j = 0; j < 100; j++) await s.once()
    await s.flush()
  }
}
await loop(2000)
// Without FILE, no profiler: the loop's CPU alone.
const session = file ? new Session() : undefined
if (session) {
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.setSamplingInterval', { interval: 50 })
  await session.post('Profiler.start')
}
const t0 = process.cpuUsage()
await loop(loops)
const cpu = process.cpuUsage(t0)
console.log(`${store}: ${((cpu.user + cpu.system) / loops).toFixed(1)} µs process CPU / delegation over ${loops}`)
if (session) {
  const { profile } = await session.post('Profiler.stop')
  session.disconnect()
  writeFileSync(file!, JSON.stringify(profile))
}
await s.host.stop()
if (s.dir) rmSync(s.dir, { recursive: true, force: true })
