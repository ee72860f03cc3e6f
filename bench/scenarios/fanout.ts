import { BenchModel, calls, CHILD, gc, host, lastMessage, now, text } from '../lib.js'

export interface FanoutRow { n: number; wallMs: number[]; peakRssMiB: number[]; retainedPerChildKiB: number[]; heapAfterKiB: number[] }

/**
 * One parent step issues N `subagent` calls at once. Every child's model call waits at a barrier
 * until all N children are live, so the heap is measured with N children alive at once.
 */
export async function fanout(options: {
  sizes: number[]
  reps: number
  /** Called while all N children are live, after the measuring GC (a profile's heap snapshot: bench/profile/child-heap.ts). */
  onLive?: () => void
  /** Called after the baseline GC, before the run (the profile's baseline snapshot). */
  onBaseline?: () => void
}): Promise<FanoutRow[]> {
  const rows: FanoutRow[] = options.sizes.map((n) => ({ n, wallMs: [], peakRssMiB: [], retainedPerChildKiB: [], heapAfterKiB: [] }))
  let arrived = 0
  let target = 0
  let waiters: Array<() => void> = []
  let baseline = 0
  let retained = 0
  let peakRss = 0
  let gcMs = 0
  const model = new BenchModel((request) => {
    const last = lastMessage(request)
    if (last.role === 'tool') return text('parent final answer')
    if (last.content.startsWith(CHILD)) {
      return new Promise((resolve) => {
        waiters.push(() => resolve(text('child answer')))
        if (++arrived !== target) return
        // Measured once the microtasks queued behind the last arrival have run: every child's
        // start has then been handed over (the last child reached its model call while its own
        // start, and possibly others, were still settling), so this is the steady live state.
        setImmediate(() => {
          peakRss = Math.max(peakRss, process.memoryUsage().rss)
          const g0 = now()
          gc()
          gcMs += now() - g0
          retained = process.memoryUsage().heapUsed - baseline
          options.onLive?.()
          const all = waiters
          waiters = []
          for (const wake of all) wake()
        })
      })
    }
    const n = Number(last.content.split(' ')[1])
    return calls(Array.from({ length: n }, (_, i) => ({ name: 'subagent', input: { description: `part ${i}`, prompt: `${CHILD}part ${i}` } })))
  })
  // The per-parent gate (default 8) would queue all but 8 children; raise it so all N run at once.
  const h = await host({ model, width: Math.max(...options.sizes) })
  try {
    for (let rep = -1; rep < options.reps; rep++) {
      for (const row of rows) {
        arrived = 0
        target = row.n
        peakRss = 0
        gcMs = 0
        gc()
        options.onBaseline?.()
        baseline = process.memoryUsage().heapUsed
        const agent = h.ctx.agents.create({})
        const t0 = now()
        const result = await agent.run(`FANOUT ${row.n}`)
        const wall = now() - t0 - gcMs // the measuring GC at the barrier is not the system's time
        if (result.stopReason !== 'completed' || result.toolCalls !== row.n) throw new Error(`fanout ${row.n}: ${JSON.stringify(result)}`)
        peakRss = Math.max(peakRss, process.memoryUsage().rss)
        await agent.dispose()
        gc()
        if (rep < 0) continue
        row.wallMs.push(wall)
        row.peakRssMiB.push(peakRss / 2 ** 20)
        row.retainedPerChildKiB.push(retained / row.n / 1024)
        row.heapAfterKiB.push((process.memoryUsage().heapUsed - baseline) / 1024)
      }
    }
    if (h.ctx.subagents.runs().length) throw new Error('fanout: live runs left')
  } finally {
    await h.stop()
  }
  return rows
}
