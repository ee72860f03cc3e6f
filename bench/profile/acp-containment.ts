/**
 * What provider-acp's cgroup containment costs a run (section 5's "ACP per-run"), not part of `npm run bench`: the
 * same fixture agent delegated through two providers, one with the default containment (a cgroup v2 per run where the
 * host may create one, entered by the agent's first process before it runs the agent) and one with
 * `containment: 'process-group'`, beside the floor (spawning the agent alone). Alternating, `runs` of each after a
 * warm-up; prints each one's median and mean wall time to the run's result (the floor: to the agent's exit), and
 * the cost of entering a cgroup alone (a shell that writes itself into a new cgroup's `cgroup.procs`, then exits,
 * against one that only exits).
 *
 *   npx tsc -b && node --expose-gc --import tsx bench/profile/acp-containment.ts [runs]
 */
import { execFileSync, spawn } from 'node:child_process'
import { mkdirSync, rmdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Logger } from 'cordis'
import * as ProviderAcp from '@cordis-subagents/provider-acp'
import { BenchModel, fmt, host, now, stats, text } from '../lib.js'

Logger.levels.base = 1
const runs = Number(process.argv[2] ?? 30)
const AGENT = fileURLToPath(new URL('../fixtures/acp-agent.mjs', import.meta.url))
const h = await host({ model: new BenchModel(() => text('unused')), tools: false, subagents: { maxChildren: 10 * runs + 100 } })
h.ctx.plugin(ProviderAcp, { name: 'cgroup', command: process.execPath, args: [AGENT] })
h.ctx.plugin(ProviderAcp, { name: 'process-group', command: process.execPath, args: [AGENT], containment: 'process-group' })
await h.ctx.lifecycle.flush()
const parent = h.ctx.agents.create({})

const floor = () => new Promise<void>((resolve) => {
  const child = spawn(process.execPath, [AGENT], { stdio: ['pipe', 'ignore', 'ignore'] })
  child.stdin.end()
  child.once('exit', () => resolve())
})
async function delegation(name: string): Promise<number> {
  const provider = h.ctx.subagents.get(name) as ProviderAcp.AcpProvider
  const t0 = now()
  const run = await h.ctx.subagents.delegate(name, { prompt: 'hello', parent, signal: new AbortController().signal })
  const result = await run.result
  const ms = now() - t0
  await run.dispose()
  await provider.reaped()
  if (result.output !== 'child answer') throw new Error(`${name}: ${JSON.stringify(result)}`)
  return ms
}

const times: Record<string, number[]> = { 'default (cgroup where possible)': [], "containment: 'process-group'": [], 'floor: the agent alone, to exit': [] }
for (let i = -3; i < runs; i++) {
  const order = i % 2 ? ['process-group', 'cgroup', 'floor'] : ['cgroup', 'process-group', 'floor']
  for (const name of order) {
    let ms: number
    if (name === 'floor') {
      const t0 = now()
      await floor()
      ms = now() - t0
    } else ms = await delegation(name)
    if (i < 0) continue
    const key = name === 'cgroup' ? 'default (cgroup where possible)' : name === 'floor' ? 'floor: the agent alone, to exit' : "containment: 'process-group'"
    times[key].push(ms)
  }
}
for (const [name, samples] of Object.entries(times)) {
  const s = stats(samples)
  console.log(`${name}: median ${fmt(s.median)} ms, mean ${fmt(s.mean)} ms (${fmt(s.min)}–${fmt(s.max)}), ${samples.length} runs`)
}
await parent.dispose()
await h.stop()

// Entering a cgroup alone: the kernel's cost of moving a process into one (no agent, no provider).
// Where provider-acp makes its run cgroups (its own function: the host's cgroup v2 directory, when it may write there).
const base = ProviderAcp.cgroupBase()
if (!base) console.log('entering a cgroup: no writable cgroup v2 here (the provider falls back to a process group)')
else {
  const entering: number[] = []
  const plain: number[] = []
  for (let i = 0; i < runs; i++) {
    const dir = join(base, `acp-containment-bench-${process.pid}-${i}`)
    mkdirSync(dir)
    let t0 = now()
    execFileSync('/bin/sh', ['-c', 'echo $$ > "$0/cgroup.procs"', dir])
    entering.push(now() - t0)
    rmdirSync(dir)
    t0 = now()
    execFileSync('/bin/sh', ['-c', 'true'])
    plain.push(now() - t0)
  }
  const [e, p] = [stats(entering), stats(plain)]
  console.log(`a shell that enters a new cgroup: median ${fmt(e.median)} ms, mean ${fmt(e.mean)} ms (max ${fmt(e.max)}); one that does not: median ${fmt(p.median)} ms, mean ${fmt(p.mean)} ms`)
}
