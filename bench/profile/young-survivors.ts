/**
 * What each young-generation collection keeps, per kind of work (issue 42, not part of `npm run bench`): the
 * bench's no-store host runs one kind of work in a loop (a turn of the event loop every 100, as section 11 does)
 * in a child process of its own under `--trace-gc-nvp`, and this prints, averaged over the scavenges of the measured
 * loop (a warm-up of a tenth as many first): what was allocated between two, what survived one, what it promoted,
 * and its pause, and the main thread's pause in every collection (young and full) per iteration. A survivor is alive when
 * the scavenge runs, or looks alive to it. `--sites` instead samples the measured loop three times with the inspector's
 * heap profiler and prints the allocation sites whose objects survived a young collection and died in a full one (bytes
 * per iteration: what the young generation copied and promoted only to free later), beside what each site allocated.
 *
 *   node --import tsx bench/profile/young-survivors.ts [kind …] [--runs N] [--semi-space MB] [--sites | --json]
 *
 * Kinds: `delegation` (the section's sync spawn delegation: the parent's tool call, the service, a child agent),
 * `background` (section 10's background start + `subagent_wait`, in a host of its own),
 * `service` (`ctx.subagents.begin` with a provider whose run ends at once: the service alone), `agents` (a root and
 * a child agent created, the child run, both disposed: no service), `agent` (one root agent's run), `churn` (plain
 * objects and a promise per iteration: the floor). Default: all of them, 30,000 iterations each (`--runs`), V8's own
 * young-generation size (`--semi-space`: a fixed semi-space of that many MB, to see whether what survives scales with it).
 * `--json`: one JSON line per kind with the same figures (test/young-collections.slow.spec.ts reads it).
 */
import { spawnSync } from 'node:child_process'
import { Session } from 'node:inspector/promises'
import { fileURLToPath } from 'node:url'
import { withoutCallerTracing } from '@cordis-subagents/shared'
import type { Agent } from '@cordis-subagents/agent'
import { backgroundHost, waitModel } from '../scenarios/background.js'
import { system } from '../scenarios/checkpoints.js'

const KINDS = ['delegation', 'background', 'service', 'agents', 'agent', 'churn'] as const
type Kind = (typeof KINDS)[number]
const MEASURED = '=== measured'

const args = process.argv.slice(2)
const option = (name: string) => { const at = args.indexOf(name); return at < 0 ? undefined : args[at + 1] }
const runs = Number(option('--runs') ?? 30_000)
if (!Number.isInteger(runs) || runs < 100) throw new Error('--runs takes a whole number of at least 100')
const semiSpace = option('--semi-space')
if (semiSpace !== undefined && !/^[1-9][0-9]{0,3}$/.test(semiSpace)) throw new Error('--semi-space takes a whole number of MB (1–9999)')
const sites = args.includes('--sites')
const json = args.includes('--json')
const named = args.filter((arg, index) => !arg.startsWith('--') && !['--runs', '--semi-space'].includes(args[index - 1]))
for (const kind of named) if (!KINDS.includes(kind as Kind)) throw new Error(`unknown kind ${kind}; one of ${KINDS.join(', ')}`)

if (process.env.YOUNG_SURVIVORS_CHILD) await loop(process.env.YOUNG_SURVIVORS_CHILD as Kind)
else for (const kind of named.length ? named as Kind[] : KINDS) report(kind)

/** Runs `kind` in a child process under --trace-gc-nvp and prints the scavenges of its measured loop. */
function report(kind: Kind): void {
  const young = semiSpace === undefined ? [] : [`--min-semi-space-size=${semiSpace}`, `--max-semi-space-size=${semiSpace}`]
  const trace = sites ? [] : ['--trace-gc-nvp']
  // V8 flags given to this script (say `--no-allocation-site-pretenuring`) go to the child too; `--import tsx` is added once.
  const flags = process.execArgv.filter((flag) => flag.startsWith('--') && flag !== '--import' && !flag.startsWith('--import='))
  const child = spawnSync(process.execPath, [...flags, ...trace, ...young, '--import', 'tsx', fileURLToPath(import.meta.url), '--runs', String(runs)], {
    env: { ...process.env, YOUNG_SURVIVORS_CHILD: kind, YOUNG_SURVIVORS_SITES: sites ? '1' : '' }, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024,
  })
  if (child.status !== 0) throw new Error(`${kind}: the loop failed (${child.status}): ${child.stderr.slice(-2000)}`)
  if (sites) return void console.log(`${kind}\n${child.stdout.slice(child.stdout.indexOf(MEASURED) + MEASURED.length + 1)}`)
  const lines = child.stdout.slice(child.stdout.indexOf(MEASURED)).split('\n').filter((line) => line.includes('gc=s '))
  const field = (line: string, name: string) => Number(new RegExp(` ${name}=([\\d.]+)`).exec(line)?.[1] ?? NaN)
  const mean = (name: string) => lines.reduce((sum, line) => sum + field(line, name), 0) / lines.length
  const mb = (bytes: number) => (bytes / 1e6).toFixed(2)
  const pauses = child.stdout.slice(child.stdout.indexOf(MEASURED)).split('\n').filter((line) => line.includes(' pause='))
  const pauseUs = pauses.reduce((sum, line) => sum + field(line, 'pause'), 0) * 1000 / runs
  if (json) {
    return void console.log(JSON.stringify({ kind, scavenges: lines.length, allocatedMB: mean('allocated') / 1e6, survivedMB: mean('new_space_survived') / 1e6,
      promotedMB: mean('promoted') / 1e6, scavengeMs: mean('scavenge'), pauseUs, collections: pauses.length }))
  }
  console.log(`${kind.padEnd(10)} ${lines.length} scavenges: allocated ${mb(mean('allocated'))} MB, survived ${mb(mean('new_space_survived'))} MB, `
    + `promoted ${mb(mean('promoted'))} MB, ${mean('scavenge').toFixed(2)} ms each (means); GC pause ${pauseUs.toFixed(1)} µs an iteration `
    + `(${pauses.length} collections)`)
}

/** The child: a warm-up of a tenth as many, the marker line, then `runs` iterations of `kind`. */
async function loop(kind: Kind): Promise<void> {
  const s = await system('none', { stores: [], storedRuns: 0, rounds: 1, batch: 100, warmup: 0 })
  const agents = withoutCallerTracing(s.host.ctx.agents) as { create(options: { parent?: Agent }): Agent }
  const subagents = withoutCallerTracing(s.host.ctx.subagents)
  let count = 0
  subagents.register({
    name: 'at-once', inheritsParentContext: false, capabilities: { persona: false, toolFilter: false, depthLimit: false },
    async start() {
      const result = Promise.resolve({ output: 'child answer', stopReason: 'completed' as const, usage: { inputTokens: 1, outputTokens: 1 } })
      return { id: `at-once-${++count}`, result, cancel() {}, async dispose() {} }
    },
  })
  const expect = (text: string | undefined) => { if (text !== 'child answer') throw new Error(`wrong answer: ${text}`) }
  const bg = kind === 'background' ? await backgroundHost(waitModel()) : undefined
  const bgAgents = bg && withoutCallerTracing(bg.ctx.agents)
  let sink: object[] = []
  const work: Record<Kind, () => Promise<void>> = {
    delegation: () => s.once(),
    background: async () => {
      const parent = bgAgents!.create({})
      const { text } = await parent.run('do the task')
      if (text !== 'parent final answer') throw new Error(`wrong answer: ${text}`)
      await parent.dispose()
    },
    service: async () => {
      const parent = agents.create({})
      const handle = await subagents.begin('at-once', { prompt: 'CHILD: x', parent, signal: new AbortController().signal }).handle
      expect((await handle.result).output)
      await handle.dispose()
      await parent.dispose()
    },
    agents: async () => {
      const parent = agents.create({})
      const child = agents.create({ parent })
      expect((await child.run('CHILD: x')).text)
      await child.dispose()
      await parent.dispose()
    },
    agent: async () => {
      const agent = agents.create({})
      expect((await agent.run('CHILD: x')).text)
      await agent.dispose()
    },
    churn: async () => {
      for (let i = 0; i < 200; i++) {
        sink.push({ i, list: [i, i + 1] })
        if (sink.length > 50) sink = []
      }
      await Promise.resolve()
    },
  }
  const once = work[kind]
  const turn = () => new Promise((resolve) => setImmediate(resolve))
  for (let i = 0; i < runs / 10; i++) if ((await once(), i % 100 === 99)) await turn()
  console.log(MEASURED)
  const measure = async () => { for (let i = 0; i < runs; i++) if ((await once(), i % 100 === 99)) await turn() }
  if (process.env.YOUNG_SURVIVORS_SITES) console.log(await survivorSites(measure))
  else await measure()
  await bg?.stop()
  await s.host.stop()
  process.exit(0)
}

interface SampleNode { callFrame: { functionName: string; url: string; lineNumber: number }; selfSize: number; children: SampleNode[] }

/**
 * Runs `measure` three times under the sampling heap profiler: keeping what full collections freed (and what is live), only
 * what is live, and everything; the first less the second is what survived a young collection and died in a full one.
 */
async function survivorSites(measure: () => Promise<void>): Promise<string> {
  const session = new Session()
  session.connect()
  const sample = async (major: boolean, minor: boolean) => {
    await session.post('HeapProfiler.startSampling', { samplingInterval: 512, includeObjectsCollectedByMajorGC: major, includeObjectsCollectedByMinorGC: minor })
    await measure()
    const { profile } = await session.post('HeapProfiler.stopSampling') as unknown as { profile: { head: SampleNode } }
    const bySite = new Map<string, number>()
    const walk = (node: SampleNode, stack: string[]) => {
      const { functionName, url, lineNumber } = node.callFrame
      const path = [`${functionName || '(anonymous)'} ${url.replace(/^.*\/(packages|bench)\//, '$1/')}:${lineNumber + 1}`, ...stack].slice(0, 3)
      if (node.selfSize) bySite.set(path.join(' < '), (bySite.get(path.join(' < ')) ?? 0) + node.selfSize)
      for (const child of node.children) walk(child, path)
    }
    walk(profile.head, [])
    return bySite
  }
  const diedOld = await sample(true, false)
  const live = await sample(false, false)
  const all = await sample(true, true)
  session.disconnect()
  const rows = [...diedOld].map(([site, bytes]) => ({ site, bytes: bytes - (live.get(site) ?? 0), all: all.get(site) ?? 0 }))
    .sort((a, b) => b.bytes - a.bytes)
  const total = rows.reduce((sum, row) => sum + Math.max(0, row.bytes), 0)
  const allocated = [...all.values()].reduce((sum, bytes) => sum + bytes, 0)
  const perRun = (bytes: number) => String(Math.round(bytes / runs)).padStart(6)
  return [`survived young, died in a full collection: ${perRun(total).trim()} B an iteration of ${perRun(allocated).trim()} allocated`,
    'died old  alloc  site (3 frames)', ...rows.slice(0, 25).map((row) => `${perRun(row.bytes)} ${perRun(row.all)}  ${row.site}`)].join('\n')
}
