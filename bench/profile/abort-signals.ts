/**
 * What an `AbortSignal` costs on this Node (issue 42 item 2), not part of `npm run bench`:
 *
 *   node --import tsx bench/profile/abort-signals.ts make    # 500,000 signals vs plain EventTargets: CPU and young-GC time
 *   node --import tsx bench/profile/abort-signals.ts run     # one agent's run with a caller signal, an abort scope, or none
 *
 * `make` prints the CPU per object and what young-generation collections (scavenges) took: on Node 20 a signal is made
 * from an `EventTarget` whose prototype is then swapped, and every one made is still alive at the next scavenge, so each
 * scavenge copies them all. `run` times `agent.run` (a child below a parent, its model answering at once) with the
 * caller's abort given as an `AbortSignal`, as an `AbortScope` (`LazyAbort`), or not at all.
 */
import { PerformanceObserver } from 'node:perf_hooks'
import { LazyAbort, withoutCallerTracing } from '@cordis-subagents/shared'
import { BenchModel, host, text } from '../lib.js'

const mode = process.argv[2] ?? 'make'

/** Young-generation collections seen while `work` runs: how many, and their time in ms. */
async function scavengesDuring(work: () => Promise<void>): Promise<{ count: number; ms: number }> {
  const seen = { count: 0, ms: 0 }
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if ((entry as unknown as { detail?: { kind?: number } }).detail?.kind !== 1) continue // 1: NODE_PERFORMANCE_GC_MINOR
      seen.count++
      seen.ms += entry.duration
    }
  })
  observer.observe({ entryTypes: ['gc'] })
  await work()
  await new Promise((resolve) => setTimeout(resolve, 20))
  observer.disconnect()
  return seen
}

async function timed(label: string, n: number, once: (i: number) => unknown | Promise<unknown>): Promise<void> {
  for (let i = 0; i < Math.min(n, 20_000); i++) await once(i)
  let cpu = 0
  const gc = await scavengesDuring(async () => {
    const t0 = process.cpuUsage()
    for (let i = 0; i < n; i++) await once(i)
    const used = process.cpuUsage(t0)
    cpu = used.user + used.system
  })
  const perScavenge = gc.count ? (gc.ms / gc.count).toFixed(2) : '—'
  console.log(`${label.padEnd(34)} ${(cpu / n).toFixed(2).padStart(7)} µs CPU each; ${gc.count} scavenges, ${perScavenge} ms each`)
}

if (mode === 'make') {
  let sink: unknown
  const N = 500_000
  // In batches of 1,000 per await: the loop yields as a real program would.
  const batch = (make: () => unknown) => async (i: number) => {
    if (i % 1000) return void (sink = make())
    await null
  }
  await timed('AbortController + signal', N, batch(() => new AbortController().signal))
  await timed('EventTarget', N, batch(() => new EventTarget()))
  await timed('AbortController, signal never read', N, batch(() => new AbortController()))
  await timed('LazyAbort, signal never read', N, batch(() => new LazyAbort()))
  void sink
} else if (mode === 'run') {
  const h = await host({ model: new BenchModel(() => text('done')) })
  const agents = withoutCallerTracing(h.ctx.agents)
  const parent = agents.create({})
  const once = (options: () => object) => async () => {
    const child = agents.create({ parent })
    await child.run('work', options())
    await child.dispose()
  }
  const N = 60_000
  await timed('run, no caller abort', N, once(() => ({})))
  await timed('run, caller AbortSignal', N, once(() => ({ signal: new AbortController().signal })))
  await timed('run, caller AbortScope (LazyAbort)', N, once(() => ({ abortScope: new LazyAbort() })))
  await parent.dispose()
  await h.stop()
} else {
  throw new Error(`usage: abort-signals.ts make|run, not ${mode}`)
}
