/**
 * `npm run bench:real`: hand-back latency of the real ACP adapters (codex-acp, claude-agent-acp)
 * against loopback fake model servers, through the loader, provider-acp and the subagent tool.
 * Hand-back = from the fake model writing the last event of the child's final reply to the parent's
 * model being asked again with the tool result (both `performance.now()` in this process).
 * Modes: cold (a process per delegation), warm with `spares: 1` and `spares: 2`; delegations run
 * back to back with 300 ms gaps. Writes bench/REAL-AGENTS.md.
 * BENCH_REAL_N sets the delegations per mode (default 20); BENCH_QUICK=1 runs 2 (a smoke test).
 * BENCH_REAL_ADAPTERS (`codex,claude`) and BENCH_REAL_MODES (`cold,spares1,spares2,ready,ready-eager`) run a subset:
 * a subset is printed only, never written to REAL-AGENTS.md (which holds every row of one run).
 */
import { writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Logger } from 'cordis'
import { machine, type Stats, stats } from '../lib.js'
import { type AdapterName, startRealAgent } from '../../test/support/real-agents.js'
import { startRealAgentApp } from '../../test/support/real-agent-app.js'

Logger.levels.base = 1

const N = process.env.BENCH_QUICK ? 2 : Number(process.env.BENCH_REAL_N ?? 20)
const GAP_MS = 300
const OUT = fileURLToPath(new URL('../REAL-AGENTS.md', import.meta.url))
const ANSWER = 'the final answer from the loopback model'

/** `spareReady`: before each delegation, wait (untimed) until the provider's spare is started and its session opened ahead. */
interface Mode { key: string; label: string; provider: string[]; spareReady?: boolean; only?: AdapterName }
const SPARE_READY = 'warm, spares: 1, spare ready'
/** claude-agent-acp starts the CLI with V8 compiling all of its code up front (provider-acp README: A warm Claude child's first prompt). */
const EAGER = 'sessionMeta: { claudeCode: { options: { executableArgs: [\'--no-lazy\'] } } }'
const SPARE_READY_EAGER = `${SPARE_READY}, CLI compiled ahead (\`${EAGER}\`)`
const MODES: Mode[] = [
  { key: 'cold', label: 'cold (process per delegation)', provider: [] },
  { key: 'spares1', label: 'warm, spares: 1', provider: ['warm: true', 'spares: 1'] },
  { key: 'spares2', label: 'warm, spares: 2', provider: ['warm: true', 'spares: 2'] },
  { key: 'ready', label: SPARE_READY, provider: ['warm: true', 'spares: 1'], spareReady: true },
  { key: 'ready-eager', label: SPARE_READY_EAGER, provider: ['warm: true', 'spares: 1', EAGER], spareReady: true, only: 'claude' },
]
const ADAPTERS = ['codex', 'claude'] as const

/** The names a comma-separated variable picks out of `all` (all of them when it is unset); an unknown name is an error. */
function pick<T extends string>(variable: string, all: readonly T[]): T[] {
  const wanted = process.env[variable]?.split(',').map((name) => name.trim()).filter(Boolean)
  if (!wanted?.length) return [...all]
  const unknown = wanted.filter((name) => !all.includes(name as T))
  if (unknown.length) throw new Error(`${variable}: unknown ${unknown.join(', ')} (one or more of ${all.join(', ')})`)
  return all.filter((name) => wanted.includes(name))
}
const adapters = pick('BENCH_REAL_ADAPTERS', ADAPTERS)
const modeKeys = pick('BENCH_REAL_MODES', MODES.map((mode) => mode.key))
const subset = adapters.length < ADAPTERS.length || modeKeys.length < MODES.length
/** Issue 45 item 6: a Claude child's delegation with a ready spare (ms, median). */
const CLAUDE_WARM_TARGET_MS = 150

/** Until the `acp` provider's pool holds a ready spare and starts nothing (a spare that is not ready yet is waited for). */
async function spareReady(host: Awaited<ReturnType<typeof startRealAgentApp>>): Promise<void> {
  const deadline = performance.now() + 120_000
  for (;;) {
    const provider = host.app.ctx.subagents.get('acp') as { pool?: { counts(): { idle: number; starting: number } } } | undefined
    const counts = provider?.pool?.counts()
    if (counts && counts.idle >= 1 && counts.starting === 0) return
    if (performance.now() > deadline) throw new Error('the spare did not get ready within 120 s')
    await sleep(50)
  }
}

interface Row { adapter: AdapterName; mode: string; handback: Summary; settled: Summary; tool: Summary; total: Summary; errors: number }

type Summary = Stats & { mean: number }
const summarize = (samples: number[]): Summary => ({ ...stats(samples), mean: samples.reduce((sum, x) => sum + x, 0) / samples.length })
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function measure(adapter: AdapterName, mode: Mode): Promise<Row> {
  const agent = await startRealAgent(adapter, (request) => ({ text: request.tools.length ? ANSWER : 'side request' }))
  const host = await startRealAgentApp(agent, { provider: mode.provider })
  const handback: number[] = []
  const settled: number[] = []
  const tool: number[] = []
  const total: number[] = []
  let errors = 0
  try {
    // One untimed delegation first: it warms the disk cache, and the pool learns what to keep spare.
    for (let i = -1; i < N; i++) {
      await sleep(GAP_MS)
      if (mode.spareReady && i >= 0) await spareReady(host)
      const before = agent.model.requests.length
      const ends = host.endedAt.length
      const run = await host.delegate('Give the final answer.')
      const endedAt = host.endedAt[ends]
      const last = agent.model.requests.findLastIndex((request, index) => index >= before && request.tools.length > 0)
      if (run.stopReason !== 'completed' || run.text !== ANSWER || last < 0 || endedAt === undefined) {
        errors++
        console.error(`${adapter} ${mode.label}: ${run.stopReason} ${run.diagnostic ?? ''} ${run.text.slice(0, 200)}`)
        continue
      }
      if (i < 0) continue
      const repliedAt = agent.model.repliedAt[last]!
      handback.push(run.resultAt - repliedAt)
      settled.push(endedAt - repliedAt)
      tool.push(run.resultAt - endedAt)
      total.push(run.resultAt - run.calledAt)
      console.log(`${adapter} ${mode.label} #${i + 1}: hand-back ${handback.at(-1)!.toFixed(1)} ms ` +
        `(to result ${settled.at(-1)!.toFixed(1)}), delegation ${total.at(-1)!.toFixed(0)} ms`)
    }
  } finally {
    await host.stop()
    await agent.close()
  }
  return {
    adapter, mode: mode.label, errors,
    handback: summarize(handback), settled: summarize(settled), tool: summarize(tool), total: summarize(total),
  }
}

const ms = (x: number) => (x >= 100 ? x.toFixed(0) : x.toFixed(1))
const cell = (s: Summary) => (s.n ? `${ms(s.median)} / ${ms(s.mean)} (${ms(s.min)}–${ms(s.max)})` : '—')

/** The issue 45 item 6 line: met when the median delegation is within the target and no delegation failed. */
function claudeTarget(row: Row | undefined, which: string): string {
  if (!row || !row.total.n) return `Claude, ${which}: no delegation measured (target ≤ ${CLAUDE_WARM_TARGET_MS} ms).`
  const met = row.errors === 0 && row.total.median <= CLAUDE_WARM_TARGET_MS
  return `Claude, ${which} (issue 45 item 6, target: delegation ≤ ${CLAUDE_WARM_TARGET_MS} ms by median): ` +
    `${ms(row.total.median)} ms median, ${met ? '**met**' : '**not met**'} in this run.`
}

const rows: Row[] = []
for (const adapter of adapters) {
  for (const mode of MODES) if (modeKeys.includes(mode.key) && (mode.only ?? adapter) === adapter) rows.push(await measure(adapter, mode))
}

const m = machine()
const lines = [
  '# Real ACP adapters: hand-back latency',
  '',
  'Generated by `npm run bench:real` (bench/real-agents/handback.ts); do not edit by hand.',
  '',
  `Machine: ${m.cpu}, ${m.memory}, Node ${m.node}, ${m.platform}, ${m.date}. Adapters: @zed-industries/codex-acp, ` +
    '@zed-industries/claude-agent-acp (root devDependencies), each against a loopback fake model server ' +
    '(test/support/fake-responses-api.ts, fake-messages-api.ts) answering at once with one text reply.',
  '',
  `Each mode: 1 untimed delegation, then ${N} timed ones, back to back with ${GAP_MS} ms gaps, through the loader, ` +
    'provider-acp and the subagent tool. **Hand-back**: from the fake model writing the last event of the ' +
    'child\'s final reply to the parent\'s model being asked with the tool result. **Delegation**: from the ' +
    'parent\'s call of `subagent_acp` to the same point (process start, handshake, the child\'s turn, hand-back).',
  'The hand-back splits at `subagent/end` (the run\'s result settled at the service): **to result** is the model\'s ' +
    'last event to that point, **result to parent** the rest (the subagent tool disposing the run, then the tool ' +
    'result reaching the parent).',
  '',
  'Milliseconds, median / mean (min–max):',
  '',
  '| adapter | mode | n | hand-back | to result | result to parent | delegation | failed |',
  '|---|---|---|---|---|---|---|---|',
  ...rows.map((row) => `| ${row.adapter} | ${row.mode} | ${row.handback.n} | ${cell(row.handback)} | ${cell(row.settled)} | ` +
    `${cell(row.tool)} | ${cell(row.total)} | ${row.errors} |`),
  '',
  `"${SPARE_READY}" waits (untimed) before each delegation until the spare has started, initialized and opened its ` +
    'session ahead, as between the delegations of a conversation; the 300 ms gaps of the rows above are shorter than a ' +
    'Claude spare takes to start, so there a delegation often waits for its spare. The Claude row after it sets ' +
    'provider-acp\'s `sessionMeta` so that claude-agent-acp starts the Claude Code CLI with Node\'s `--no-lazy`: V8 ' +
    'compiles all of the CLI\'s code while the spare starts instead of during the first prompt (the spare takes longer ' +
    'to start and holds more memory; `bench/profile/claude-first-prompt.ts` measures both).',
  '',
  claudeTarget(rows.find((row) => row.adapter === 'claude' && row.mode === SPARE_READY), 'a ready spare'),
  '',
  claudeTarget(rows.find((row) => row.adapter === 'claude' && row.mode === SPARE_READY_EAGER), 'a ready spare whose CLI compiled its code ahead'),
  '',
]
if (subset) console.log(`A subset (BENCH_REAL_ADAPTERS / BENCH_REAL_MODES): ${OUT} left as it was.`)
else writeFileSync(OUT, lines.join('\n'))
console.log(lines.join('\n'))
