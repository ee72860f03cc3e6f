/**
 * Background start + `subagent_wait` against one synchronous delegation (issue 42: background ≤ 2×), not part of
 * `npm run bench`: section 10's two workloads, each in a host of its own, alternated in slices of 500 after a
 * warm-up, process CPU per delegation (GC threads included). `prof` as the first argument runs only the background
 * side (for `--cpu-prof`).
 *
 *   tsc -b && node --expose-gc --import tsx bench/profile/background-loop.ts [pairs]
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/profile/background-loop.ts prof 20000
 */
import { withoutCallerTracing } from '@cordis-subagents/shared'
import { delegationModel, host } from '../lib.js'
import { backgroundHost, waitModel } from '../scenarios/background.js'

// Section 10's own workloads: its synchronous delegation and its background start + `subagent_wait`.
const sync = await host({ model: delegationModel('subagent') })
const bg = await backgroundHost(waitModel())
const loop = (ctx: typeof sync.ctx) => {
  const agents = withoutCallerTracing(ctx.agents)
  return async (n: number) => {
    const cpu0 = process.cpuUsage()
    for (let i = 0; i < n; i++) {
      const agent = agents.create({})
      const result = await agent.run('do the task')
      if (result.text !== 'parent final answer') throw new Error(`wrong answer: ${JSON.stringify(result)}`)
      await agent.dispose()
    }
    const cpu = process.cpuUsage(cpu0)
    return (cpu.user + cpu.system) / n
  }
}
const runSync = loop(sync.ctx)
const runBg = loop(bg.ctx)
await runSync(2000)
await runBg(2000)
if (process.argv[2] === 'prof') {
  console.log(`background: ${(await runBg(Number(process.argv[3] ?? 20000))).toFixed(1)} µs CPU a delegation`)
} else {
  const ratios: number[] = []
  let s = 0
  let b = 0
  const pairs = Number(process.argv[2] ?? 20)
  for (let i = 0; i < pairs; i++) {
    const [one, two] = i % 2 ? [await runBg(500), await runSync(500)] : [await runSync(500), await runBg(500)].reverse()
    s += two
    b += one
    ratios.push(one / two)
  }
  ratios.sort((x, y) => x - y)
  console.log(`sync ${(s / pairs).toFixed(1)} µs, background ${(b / pairs).toFixed(1)} µs CPU; ${(b / s).toFixed(2)}× by means, paired median ${ratios[pairs >> 1].toFixed(2)}× (p10 ${ratios[Math.floor(pairs * 0.1)].toFixed(2)}, p90 ${ratios[Math.floor(pairs * 0.9)].toFixed(2)})`)
}
await sync.stop()
await bg.stop()
