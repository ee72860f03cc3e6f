/**
 * Profiling harness for one spawn delegation (issue 17), not part of `npm run bench`.
 *
 *   tsc -b && node --expose-gc --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/profile/delegation.ts loop
 *   node --expose-gc --import tsx bench/profile/delegation.ts heap    # writes a heap snapshot with 1,000 live children
 *   node --expose-gc --import tsx bench/profile/delegation.ts alloc   # bytes allocated per delegation
 *   node --expose-gc --import tsx bench/profile/delegation.ts count   # AbortControllers made per delegation
 *   node --expose-gc --import tsx bench/profile/delegation.ts sampled # bytes allocated per delegation (collected ones too), by package
 *   node --expose-gc --import tsx bench/profile/delegation.ts sampled 3000 functions # …and the 30 functions that allocate the most
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { Session } from 'node:inspector/promises'
import { writeHeapSnapshot } from 'node:v8'
import { withoutCallerTracing } from '@cordis-subagents/shared'
import { BenchModel, calls, CHILD, delegationModel, gc, host, lastMessage, now, text } from '../lib.js'

const mode = process.argv[2] ?? 'loop'
// BENCH_ALS=1: an AsyncLocalStorage in use, as the OpenAI Agents SDK's tracing context makes one in
// the bench process (Node 20 then runs promise hooks for every promise).
if (process.env.BENCH_ALS) new AsyncLocalStorage().enterWith({})

if (mode === 'count') {
  let made = 0
  const Native = globalThis.AbortController
  globalThis.AbortController = class extends Native {
    constructor() {
      super()
      made++
    }
  }
  const h = await host({ model: delegationModel('subagent') })
  const agents = withoutCallerTracing(h.ctx.agents)
  const n = 100
  for (let i = 0; i < n; i++) {
    const agent = agents.create({})
    await agent.run('do the task')
    await agent.dispose()
  }
  console.log(`${made / n} AbortControllers per delegation (parent run included)`)
  await h.stop()
} else if (mode === 'loop' || mode === 'alloc') {
  const h = await host({ model: delegationModel('subagent') })
  const agents = withoutCallerTracing(h.ctx.agents)
  const once = async () => {
    const agent = agents.create({})
    const result = await agent.run('do the task')
    if (result.text !== 'parent final answer') throw new Error('wrong answer')
    await agent.dispose()
  }
  for (let i = 0; i < 2000; i++) await once()
  const n = Number(process.argv[3] ?? 20000)
  gc()
  const heap0 = process.memoryUsage().heapUsed
  const t0 = now()
  const cpu0 = process.cpuUsage()
  for (let i = 0; i < n; i++) await once()
  const ms = now() - t0
  const cpu = process.cpuUsage(cpu0)
  // CPU time is far less sensitive than wall time to other processes on a shared machine.
  console.log(`${n} delegations: ${(ms * 1000 / n).toFixed(1)} µs wall, ${((cpu.user + cpu.system) / n).toFixed(1)} µs CPU each`)
  if (mode === 'alloc') console.log(`heap growth without GC: ${((process.memoryUsage().heapUsed - heap0) / n / 1024).toFixed(2)} KiB per delegation (lower bound on allocation)`)
  await h.stop()
} else if (mode === 'sampled') {
  // The inspector's sampling heap profiler, keeping the objects GC collected: what a delegation allocates, not what it keeps.
  const h = await host({ model: delegationModel('subagent') })
  const agents = withoutCallerTracing(h.ctx.agents)
  const once = async () => {
    const agent = agents.create({})
    await agent.run('do the task')
    await agent.dispose()
  }
  for (let i = 0; i < 3000; i++) await once()
  const session = new Session()
  session.connect()
  await session.post('HeapProfiler.enable')
  await session.post('HeapProfiler.startSampling', { samplingInterval: 256, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true })
  const n = Number(process.argv[3] ?? 3000)
  for (let i = 0; i < n; i++) await once()
  const { profile } = await session.post('HeapProfiler.stopSampling')
  session.disconnect()
  type Sample = { selfSize: number; callFrame: { functionName: string; url: string; lineNumber: number }; children: Sample[] }
  const byPlace = new Map<string, number>()
  // `sampled N functions`: also the 30 functions that allocate the most, with their file and line.
  const byFunction = process.argv[4] === 'functions' ? new Map<string, number>() : undefined
  let total = 0
  const walk = (node: Sample) => {
    const { functionName, url, lineNumber } = node.callFrame
    total += node.selfSize
    const place = /\/packages\/([^/]+)\//.exec(url)?.[1] ?? (url.startsWith('node:') ? 'node' : url ? 'bench and dependencies' : 'native (promises, Map, Set, …)')
    byPlace.set(place, (byPlace.get(place) ?? 0) + node.selfSize)
    const where = `${functionName || '(anonymous)'} ${url.replace(/^.*\/(packages|node_modules)\//, '')}:${lineNumber + 1}`
    byFunction?.set(where, (byFunction.get(where) ?? 0) + node.selfSize)
    for (const child of node.children) walk(child)
  }
  walk(profile.head as unknown as Sample)
  console.log(`${(total / n / 1024).toFixed(1)} KiB allocated per delegation (sampled); by where it was allocated:`)
  for (const [place, bytes] of [...byPlace].sort((a, b) => b[1] - a[1])) console.log(`  ${place}: ${(bytes / n / 1024).toFixed(1)} KiB`)
  for (const [where, bytes] of [...byFunction ?? []].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(`  ${(bytes / n).toFixed(0).padStart(6)} B  ${where}`)
  await h.stop()
} else if (mode === 'heap') {
  const n = Number(process.argv[3] ?? 1000)
  let arrived = 0
  let waiters: Array<() => void> = []
  let retained = 0
  let baseline = 0
  const model = new BenchModel((request) => {
    const last = lastMessage(request)
    if (last.role === 'tool') return text('parent final answer')
    if (last.content.startsWith(CHILD)) {
      return new Promise((resolve) => {
        waiters.push(() => resolve(text('child answer')))
        if (++arrived !== n) return
        // As in bench/scenarios/fanout.ts: measured once every child's start has been handed over.
        setImmediate(() => {
          gc()
          retained = process.memoryUsage().heapUsed - baseline
          if (process.argv[4]) writeHeapSnapshot(process.argv[4])
          const all = waiters
          waiters = []
          for (const wake of all) wake()
        })
      })
    }
    return calls(Array.from({ length: n }, (_, i) => ({ name: 'subagent', input: { description: `part ${i}`, prompt: `${CHILD}part ${i}` } })))
  })
  const h = await host({ model, width: n })
  for (let rep = 0; rep < 3; rep++) {
    arrived = 0
    gc()
    baseline = process.memoryUsage().heapUsed
    const agent = h.ctx.agents.create({})
    await agent.run('FANOUT')
    await agent.dispose()
    console.log(`rep ${rep}: ${(retained / n / 1024).toFixed(2)} KiB retained per live child`)
  }
  await h.stop()
}
