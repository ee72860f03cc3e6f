/**
 * Where a checkpointed delegation's main-thread time goes (issue 42 item 1), not part of `npm run bench`:
 * one system of section 11 at a time (`none`, `sqlite` or `postgres`, seeded with CHECKPOINTS_RUNS runs),
 * warmed up, then CHECKPOINTS_LOOPS delegations (default 20,000) in rounds of 100 with the store's writes
 * flushed and the event loop turned after each round, as the section does; only that loop is profiled (the
 * inspector's CPU profiler, 50 µs sampling), so start-up and seeding are left out. Writes FILE.cpuprofile; read it with summarize.ts.
 * `alloc` as FILE measures allocation instead: the heap's growth per delegation over CHECKPOINTS_ALLOC rounds
 * of 100 (default 10) with no collection inside them (run it with `--max-semi-space-size=256` so none is
 * needed; a round a collection landed in is left out and counted), the store's writes flushed in each.
 * `hooks` as FILE times the store's part of each delegation where it runs (wall µs per call, all synchronous):
 * the journal's start and settle hooks, within the settle the store's logged write, and within that the run
 * log's one `write` (a system call); the loop's CPU is printed as without a profile (the timing adds a little).
 *
 *   CHECKPOINTS_PG_URL=postgres://… node --expose-gc --import tsx --conditions=cordis-subagents-source \
 *     bench/profile/checkpoints-loop.ts sqlite /tmp/sqlite.cpuprofile
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { withoutCallerTracing } from '@cordis-subagents/shared'
import { system } from '../scenarios/checkpoints.js'

const [store = 'sqlite', file] = process.argv.slice(2) as ['none' | 'sqlite' | 'postgres', string | undefined]
const loops = Number(process.env.CHECKPOINTS_LOOPS ?? 20_000)
const allocRounds = Number(process.env.CHECKPOINTS_ALLOC ?? 10)
/** `hooks`: per timed method, wall ms in all and calls. */
const timed = new Map<string, [number, number]>()
const s = await system(store, {
  // Room for every delegation of the warm-up, the loop and the alloc rounds (rounds × batch), as the section has:
  // a trim is not what is measured.
  stores: [], storedRuns: Number(process.env.CHECKPOINTS_RUNS ?? 1000),
  rounds: Math.ceil((loops + 2000) / 100) + allocRounds, batch: 100, warmup: 0,
  pgUrl: process.env.CHECKPOINTS_PG_URL,
})
// Each round ends as the section's slices do: the store's writes flushed, then one turn of the event loop
// (CHECKPOINTS_TURN=store: none but a store's wait for its writer, as the section before issue 42's last round).
const turnEachRound = process.env.CHECKPOINTS_TURN !== 'store'
const loop = async (count: number) => {
  for (let i = 0; i < count; i += 100) {
    for (let j = 0; j < 100; j++) await s.once()
    await s.flush()
    if (turnEachRound) await new Promise((resolve) => setImmediate(resolve))
  }
}
await loop(2000)
if (file === 'alloc') {
  const { PerformanceObserver } = await import('node:perf_hooks')
  let collections = 0
  const observer = new PerformanceObserver((list) => { collections += list.getEntries().length })
  observer.observe({ entryTypes: ['gc'] })
  const perDelegation: number[] = []
  let skipped = 0
  for (let r = 0; r < allocRounds; r++) {
    global.gc!()
    // The observer's entries of that collection arrive later.
    await new Promise((resolve) => setTimeout(resolve, 20))
    const before = collections
    const heap0 = process.memoryUsage().heapUsed
    await loop(100)
    const heap = process.memoryUsage().heapUsed - heap0
    await new Promise((resolve) => setTimeout(resolve, 20))
    if (collections !== before) skipped++
    else perDelegation.push(heap / 100)
  }
  observer.disconnect()
  perDelegation.sort((a, b) => a - b)
  const median = perDelegation[Math.floor(perDelegation.length / 2)]
  console.log(`${store}: ${median === undefined ? '—' : (median / 1024).toFixed(2)} KiB allocated / delegation (median of ${perDelegation.length} rounds of 100; ${skipped} left out: a collection landed in them)`)
  await s.host.stop()
  if (s.dir) rmSync(s.dir, { recursive: true, force: true })
  process.exit(0)
}
if (file === 'hooks') timeHooks()
// Without FILE, no profiler: the loop's CPU alone.
const session = file && file !== 'hooks' ? new Session() : undefined
if (session) {
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.setSamplingInterval', { interval: 50 })
  await session.post('Profiler.start')
}
// The main thread's own CPU (its schedstat, Linux; read after a short sleep so it is current), and the process'.
const mainThread = () => {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1)
  try {
    return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'latin1').split(' ')[0]) / 1000
  } catch {
    return NaN
  }
}
const t0 = process.cpuUsage()
const main0 = mainThread()
await loop(loops)
const main = mainThread() - main0
const cpu = process.cpuUsage(t0)
console.log(`${store}: ${(main / loops).toFixed(1)} µs main-thread CPU, ${((cpu.user + cpu.system) / loops).toFixed(1)} µs process CPU / delegation over ${loops}`)
if (session) {
  const { profile } = await session.post('Profiler.stop')
  session.disconnect()
  writeFileSync(file!, JSON.stringify(profile))
}
for (const [name, [ms, calls]] of timed) console.log(`  ${name}: ${((1000 * ms) / calls).toFixed(2)} µs a call (${calls} calls)`)
await s.host.stop()
if (s.dir) rmSync(s.dir, { recursive: true, force: true })

/** Wraps each named method of the object's class with a wall-clock timer (`timed`); the methods are synchronous. */
function timeHooks(): void {
  const time = (target: object | undefined, method: string, name: string) => {
    if (!target) throw new Error(`hooks: no ${name} on this system (a store with a run log is needed)`)
    const proto = Object.getPrototypeOf(target) as Record<string, (...args: unknown[]) => unknown>
    const original = proto[method]
    timed.set(name, [0, 0])
    proto[method] = function (this: unknown, ...args: unknown[]) {
      const t0 = performance.now()
      try {
        return original.apply(this, args)
      } finally {
        const entry = timed.get(name)!
        entry[0] += performance.now() - t0
        entry[1]++
      }
    }
  }
  if (store === 'none') throw new Error('hooks: times a store\'s parts; give sqlite or postgres')
  const journal = (s.host.ctx.subagents as unknown as { journal?: object }).journal
  const checkpoints = withoutCallerTracing(s.host.ctx.checkpoints) as unknown as { writes?: object; log?: object }
  time(journal, 'started', 'journal: start hook')
  time(journal, 'settled', 'journal: settle hook')
  time(checkpoints.writes, 'writeLogged', 'store: the settle\'s logged write (in the settle hook)')
  time(checkpoints.log, 'put', 'run log: its one write (in the logged write)')
}
