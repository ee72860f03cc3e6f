/**
 * One run of every scenario (overhead, fan-out, soak, isolation, churn, ACP, A2A, limits, history
 * growth, tracing, background) in one process; run.ts starts it once per run and aggregates.
 * Writes `{ out, targets, headline, seconds }` as JSON to $BENCH_OUT (else stdout); prints progress to stderr.
 * BENCH_QUICK=1 runs tiny iteration counts (a smoke test of the harness, figures meaningless).
 */
import { writeFileSync } from 'node:fs'
import { Logger } from 'cordis'
import { fmt, fmtMean, fmtStats, stats } from './lib.js'
import { overheadReport } from './overhead-report.js'
import { pairedFigure, ratioTarget, type Target } from './targets.js'
import { overhead } from './scenarios/overhead.js'
import { fanout } from './scenarios/fanout.js'
import { soak } from './scenarios/soak.js'
import { churn } from './scenarios/churn.js'
import { acp, ACP_SYSTEMS, handback, warmAcp } from './scenarios/acp.js'
import { a2a } from './scenarios/a2a.js'
import { isolation } from './scenarios/isolation.js'
import { limits } from './scenarios/limits.js'
import { growth, NOT_READING } from './scenarios/growth.js'
import { TELEMETRY_SYSTEMS, telemetry } from './scenarios/telemetry.js'
import { background } from './scenarios/background.js'
import { checkpointsSection } from './scenarios/checkpoints-report.js'
import { serving, SERVING } from './scenarios/serving.js'
import { servingLines } from './scenarios/serving-report.js'
import { rateLimitSection } from './scenarios/rate-limit.js'

// Provider reloads log an info line each; 10,000 of them would measure the terminal. Warnings stay on.
Logger.levels.base = 1

const quick = !!process.env.BENCH_QUICK
const q = (full: number, small: number) => (quick ? small : full)
/**
 * Interleaved sections with a ratio target: batches of 1,000 calls, so the collections spread over
 * the batches instead of landing in one of a pair (the A/A measurement: bench/README.md, Method).
 */
const PAIRED = { rounds: q(25, 2), batch: q(1000, 10), warmup: q(3, 1) }
const out: string[] = []
const targets: Target[] = []
/** The headline rows (scenario, ours, peers/baseline), written into CONTRIBUTING.md between its markers. */
const headline: Array<[string, string, string]> = []
const log = (line = '') => { out.push(line); console.error(line) }
const table = (head: string[], rows: Array<Array<string | number>>) => {
  log(`| ${head.join(' | ')} |`)
  log(`|${head.map(() => '---').join('|')}|`)
  for (const row of rows) log(`| ${row.join(' | ')} |`)
  log()
}
const started = performance.now()
/** A difference with its sign: +1.2, −0.1. */
const signed = (value: number) => {
  const text = fmt(Math.abs(value))
  return `${value < 0 && Number.parseFloat(text.replaceAll(',', '')) !== 0 ? '−' : '+'}${text}`
}

// Section 1 runs last but is printed first: the OpenAI Agents SDK keeps its tracing context in an
// AsyncLocalStorage, and once one is in use Node 20 runs promise hooks for every promise in the
// process (measured: ≈ +3 KiB retained per live child in section 2, and more GC). Every section
// that measures only our side runs before the peers ever have.
const section1 = { out: out.length, targets: targets.length, headline: headline.length }

// 2 -------------------------------------------------------------------------------------------
{
  const rows = await fanout({ sizes: [10, 100, 1000], reps: q(5, 1) })
  log('## 2. Fan-out: N parallel delegations in one parent step (subagent → spawn)')
  log()
  log(`The tree limits (\`maxConcurrentPerParent\`, \`maxConcurrent\`, \`maxChildren\` of ctx.subagents, \`maxToolCallsPerStep\` of ctx.agents) are raised to 1000 for this scenario (the defaults would refuse or queue all but a few). Retained heap per child: heap after GC while all N children are live (each waits in its model call), minus the heap before the run, ÷ N. Wall time excludes that measuring GC. ${rows[0].wallMs.length} reps each.`)
  log()
  table(['N', 'wall ms', 'wall µs per child', 'peak RSS MiB', 'retained heap per live child KiB', 'heap left after run KiB'],
    rows.map((row) => {
      const wall = stats(row.wallMs)
      return [
        row.n, fmtStats(wall), fmt((wall.median * 1000) / row.n), fmt(stats(row.peakRssMiB).median),
        fmtStats(stats(row.retainedPerChildKiB)), fmt(stats(row.heapAfterKiB).median),
      ]
    }))
  const big = rows[rows.length - 1]
  const wall = stats(big.wallMs).median
  const perChild = stats(big.retainedPerChildKiB).median
  const growth = stats(big.wallMs).median / big.n / (stats(rows[1].wallMs).median / rows[1].n)
  headline.push(['1,000 parallel children in one parent step', `${fmt(wall)} ms wall, ${fmt(perChild)} KiB heap per live child; µs per child ${fmt(growth, 2)}× from 100 to 1,000`, '—'])
  targets.push(['1,000 concurrent children in ≤ 1 s wall', wall <= 1000, `${fmt(wall)} ms`, 'wall'])
  targets.push(['≤ 12 KiB retained heap per live child', perChild <= 12, `${fmt(perChild)} KiB`, '—'])
  const perChildUs = (row: typeof big) => row.wallMs.map((ms) => (ms * 1000) / row.n)
  targets.push(ratioTarget('fan-out growth ≤ 1.2× (µs per child at 1000 ÷ at 100, paired by rep)', perChildUs(big), perChildUs(rows[1]), { atMost: 1.2 }, { clock: 'wall', unit: 'µs' }))
}

// 3 -------------------------------------------------------------------------------------------
{
  const r = await soak({ delegations: q(10_000, 200), warmup: q(500, 20) })
  log('## 3. Leak/soak: sequential delegations, 10% aborted mid-child')
  log()
  table(['delegations', 'aborted', 'heap after GC start → end MiB', 'growth KiB', 'live runs at end', 'cordis listeners start → end', 'active handles start → end', 'seconds'],
    [[r.delegations, r.aborted, `${fmt(r.heapStartMiB, 2)} → ${fmt(r.heapEndMiB, 2)}`, fmt(r.growthKiB), r.liveRuns, `${r.listenersStart} → ${r.listenersEnd}`, `${r.handlesStart} → ${r.handlesEnd}`, fmt(r.seconds, 2)]])
  targets.push(['heap growth < 1 MiB over 10,000 delegations', r.growthKiB < 1024, `${fmt(r.growthKiB)} KiB`, '—'])
  targets.push(['zero live runs / listeners left', r.liveRuns === 0 && r.listenersEnd === r.listenersStart, `${r.liveRuns} runs, listeners ${r.listenersStart} → ${r.listenersEnd}`, '—'])
  headline.push([`${r.delegations.toLocaleString('en')} delegations, 10 % aborted mid-child`,
    `${fmt(r.growthKiB)} KiB heap growth after GC, ${r.liveRuns} live runs, listeners ${r.listenersStart} → ${r.listenersEnd}`, '—'])
}

// 4 -------------------------------------------------------------------------------------------
{
  const r = await churn({ cycles: q(10_000, 200), warmup: q(200, 10), chunks: 10 })
  const ratio = r.provider.median / r.plugin.median
  log('## 4. Provider churn: reload the spawn provider with a mounted subagent tool')
  log()
  log(`${r.cycles} cycles of \`fork.update()\` (changed config → dispose → apply → provider-removed/added → tool unmount/remount), in 10 chunks; each cycle checks the tool is mounted again. Tool mounted at the end: ${r.mountedAtEnd}. The baseline is cordis' own reload of a plugin that does nothing (\`fork.update()\` with a changed config → dispose → apply); the part of a provider's reload that is cordis' whatever the provider does is cordis' own reload of a plugin that does nothing but declare what the provider declares (\`reusable\`, \`inject: ['subagents', 'agents']\`: cordis checks each inject is ready at every start). The three kinds' chunks rotate in the same app.`)
  log()
  table(['reload', 'µs per cycle (wall): **mean with GC** · median (min–max of chunks)'],
    [['spawn provider with a mounted tool', fmtMean(r.provider)], ['a plugin that does nothing (cordis)', fmtMean(r.plugin)],
      ['a plugin that does nothing but declare the provider\'s inject (cordis)', fmtMean(r.injectingPlugin)]])
  log(`The part that is cordis': ${fmt(r.injectingPlugin.mean)} µs of the provider's ${fmt(r.provider.mean)} (means); ours on top of it (the provider registered, the tool unmounted and remounted): ${fmt(r.provider.mean - r.injectingPlugin.mean)} µs. Provider ÷ that plugin: ${pairedFigure(r.samples, r.injecting, 'µs')}.`)
  log()
  const reload = ratioTarget('provider reload ≤ 2× cordis\' own plugin reload (paired by chunk)', r.samples, r.baseline, { atMost: 2 }, { clock: 'wall', unit: 'µs' })
  targets.push(r.mountedAtEnd ? reload : [reload[0], false, `${reload[2]}; the tool was not mounted at the end`, ...reload.slice(3)] as Target)
  headline.push(['provider reload with a mounted tool', `${fmt(r.provider.mean)} µs per remove → re-add → remount (${fmt(ratio, 2)}× cordis' own reload of an empty plugin, median)`, '—'])
}

// 5 -------------------------------------------------------------------------------------------
{
  const r = await acp({ iterations: q(20, 2), warmup: q(2, 1) })
  const hand = r.exit[ACP_SYSTEMS.hand].median
  const ours = r.exit[ACP_SYSTEMS.ours].median
  const floor = r.exit[ACP_SYSTEMS.floor].median
  log('## 5. ACP: per-run latency against a fixture agent (bench/fixtures/acp-agent.mjs)')
  log()
  log(`${r.iterations} runs each, interleaved, wall clock. A run = spawn → initialize → session/new → prompt → end_turn, timed to two matched end points: **to the result** (the hand client has the prompt's answer; ours: the run's \`result\`) and **to the process' exit** (the hand client closes stdin and waits for the exit; ours disposes the run, handed back at the end of the turn, and waits for the provider's \`reaped()\`). The floor, an empty node script, has one end point: its exit.`)
  log()
  table(['system', 'ms to result median (min–max)', 'ms to exit median (min–max)', 'to exit vs hand client'],
    Object.entries(r.exit).map(([name, s]) => [name, r.result[name] ? fmtStats(r.result[name]) : '—', fmtStats(s), `${fmt(s.median / hand, 2)}×`]))
  for (const [end, samples] of [['to result', r.result], ['to exit', r.exit]] as const) {
    targets.push(ratioTarget(`ACP per-run ≤ 1.1× the minimal hand client (${end})`, samples[ACP_SYSTEMS.ours].samples!, samples[ACP_SYSTEMS.hand].samples!,
      { atMost: 1.1 }, { clock: 'wall', unit: 'ms', note: `floor ${fmt(floor)} ms to exit` }))
  }

  const hb = await handback({ iterations: q(20, 2), warmup: q(2, 1) })
  const good = hb.stats['well-behaved (exits at EOF)'].median
  const stubborn = hb.stats['ignores stdin (Codex/Claude-like)'].median
  log('### ACP hand-back delay (ms from the agent\'s end of turn to result + dispose done)')
  log()
  log(`${hb.iterations} runs each, interleaved. The subagent tool returns after the run is disposed, so this is what the parent waits beyond the turn. An agent that ignores the end of stdin gets \`exitGrace\` (50 ms) and then SIGTERM; it used to get \`cancelGrace\` (5 s).`)
  log()
  table(['agent', 'ms median (min–max)'], Object.entries(hb.stats).map(([name, s]) => [name, fmtStats(s)]))
  targets.push(['ACP hand-back: stdin-ignoring agent ≤ 100 ms over a well-behaved one', stubborn - good <= 100, `${signed(stubborn - good)} ms (${fmt(stubborn)} vs ${fmt(good)} ms)`, 'wall'])
  headline.push(['ACP run against a fixture agent', `${fmt(ours / hand, 2)}× a minimal hand-written ACP SDK client; hand-back ${signed(stubborn - good)} ms for an agent that ignores stdin`,
    `an empty \`node\` start is ≈ ${fmt(floor / ours, 1)} of a run`])
}

// 5b (provider-acp warm / reuse) -------------------------------------------------------------
{
  const r = await warmAcp({ iterations: q(30, 2), warmup: q(3, 1) })
  const floorName = 'protocol floor: hand client, live initialized process (session/new → prompt)'
  const floor = r.result[floorName].median
  const cold = r.result['ours: cold process (default)'].median
  const warm = r.result['ours: warm spare (warm: true)'].median
  const reused = r.result['ours: reused process, new session (reuse: true)'].median
  const firstSession = r.result['hand client, first session on a freshly initialized process'].median
  log('## 5b. ACP: cold vs warm spare vs reused process (provider-acp `warm` / `reuse`)')
  log()
  log(`${r.iterations} runs each, interleaved, wall clock, against bench/fixtures/acp-agent.mjs (its own turn is one text chunk, well under 1 ms). "to result": delegate → the result (what the parent model waits for); "to result + dispose": also the run disposed (what the subagent tool waits for: a cold or warm process is stopped then, a reused one goes back to the pool). The warm spare is given time to start between runs (untimed), as between delegations of a real conversation. The protocol floor is a hand-written ACP SDK client doing session/new → prompt on a process that is already running and initialized (no spawn, no import) and has served many sessions; the row below it is the same client's first session on a process it has just initialized, which is what a warm spare is (the agent's session/new and prompt code has not run in it yet).`)
  log()
  table(['system', 'ms to result median (min–max)', 'ms to result + dispose median (min–max)', 'to result vs floor'],
    Object.keys(r.result).map((name) => [name, fmtStats(r.result[name]), fmtStats(r.disposed[name]), `${fmt(r.result[name].median / floor, 2)}×`]))
  targets.push(ratioTarget('ACP warm spare ≤ 3× the protocol floor (to result)', r.result['ours: warm spare (warm: true)'].samples!, r.result[floorName].samples!, { atMost: 3 },
    { clock: 'wall', unit: 'ms', note: `a hand client's first session on a fresh process ${fmt(firstSession, 2)} ms; cold ${fmt(cold)} ms` }))
  targets.push(['ACP reused process ≤ 10 ms over the agent\'s own turn (to result + dispose)', r.disposed['ours: reused process, new session (reuse: true)'].median <= 10,
    `${fmt(r.disposed['ours: reused process, new session (reuse: true)'].median, 2)} ms (to result ${fmt(reused, 2)} ms; floor ${fmt(floor, 2)} ms)`, 'wall'])
  headline.push(['ACP run with provider-acp `warm` / `reuse`', `warm spare ${fmt(warm, 1)} ms, reused process ${fmt(reused, 1)} ms to the result`,
    `cold ${fmt(cold, 1)} ms; protocol floor (live process, hand client) ${fmt(floor, 1)} ms`])
}

// 5c (provider-a2a) -----------------------------------------------------------------------------
{
  const r = await a2a({ iterations: q(20, 2), warmup: q(2, 1) })
  const ours = r.stats['A2A: ctx.subagents → a2a (streaming, loopback)'].median
  const hand = r.stats['A2A floor: hand-written SDK client (SendStreamingMessage)'].median
  const inProcess = r.stats['in-process: ctx.subagents → spawn'].median
  const acpRun = r.stats['ACP: ctx.subagents → acp (cold process per run)'].median
  log('## 5c. Per-run latency by transport: in-process vs ACP vs A2A')
  log()
  log(`${r.iterations} runs each, interleaved. A run = delegate → the child answers "child answer" at once → result → dispose. In-process: provider-spawn (one child model step). ACP: provider-acp, a cold bench/fixtures/acp-agent.mjs process per run. A2A: provider-a2a against an A2A server built from @a2a-js/sdk's server classes on 127.0.0.1 (in the bench process, so no spawn is counted), streaming (SendStreamingMessage over SSE); the floor is a hand-written SDK client doing the same call on the same server.`)
  log()
  table(['system', 'ms per run median (min–max)', 'vs in-process'],
    Object.entries(r.stats).map(([name, s]) => [name, fmtStats(s, '', 2), `${fmt(s.median / inProcess, 1)}×`]))
  targets.push(ratioTarget('A2A per-run ≤ 1.5× the hand-written SDK client', r.stats['A2A: ctx.subagents → a2a (streaming, loopback)'].samples!,
    r.stats['A2A floor: hand-written SDK client (SendStreamingMessage)'].samples!, { atMost: 1.5 }, { clock: 'wall', unit: 'ms' }))
  headline.push(['one delegation by transport (child answers at once)', `A2A (loopback, streaming) ${fmt(ours, 2)} ms; in-process ${fmt(inProcess, 2)} ms`,
    `ACP (cold process) ${fmt(acpRun, 1)} ms; hand-written A2A SDK client ${fmt(hand, 2)} ms`])
}

// 6 -------------------------------------------------------------------------------------------
{
  const rows = await isolation({ inline: 40, delegated: [10, 40, 160] })
  log('## 6. Context isolation: parent transcript after N reads of 2 KiB files')
  log()
  table(['mode', 'file reads', 'parent transcript bytes', 'parent messages'], rows.map((r) => [r.mode, r.reads, r.bytes, r.messages]))
  const delegated = rows.filter((r) => r.mode === 'delegated')
  const spread = Math.max(...delegated.map((r) => r.bytes)) - Math.min(...delegated.map((r) => r.bytes))
  const inline40 = rows.find((r) => r.mode === 'inline')!
  const del40 = delegated.find((r) => r.reads === 40)!
  log(`40 reads: delegated parent transcript is ${fmt(inline40.bytes / del40.bytes)}× smaller than inline.`)
  headline.push(['parent transcript after 40 × 2 KiB file reads', `${del40.bytes} B / ${del40.messages} messages when delegated`,
    `${inline40.bytes.toLocaleString('en')} B / ${inline40.messages} messages inline (${fmt(inline40.bytes / del40.bytes)}× more)`])
  log()
  targets.push(['parent transcript growth per delegation independent of the child\'s tool count', spread <= 16, `${delegated.map((r) => `${r.reads} reads → ${r.bytes} B`).join(', ')}`, '—'])
}

// 7 -------------------------------------------------------------------------------------------
{
  const r = await limits({
    stepRounds: q(9, 2), stepIterations: q(200_000, 1000), rounds: q(25, 2), batch: q(100, 10), warmup: q(10, 1),
    wideReps: q(5, 1), deepReps: q(3, 1), deepDepth: q(10_000, 200),
  })
  log('## 7. Tree limits: what bounding a tree costs')
  log()
  log(`Budget bookkeeping of one step (wall + steps + tokens checks, step and token charges, one tool-call check and charge) on a run at depth 3 with a limit of its own at every level, ${r.stepNs.n} rounds: **${fmtStats(r.stepNs, ' ns')}**.`)
  log()
  const [plainName, budgetName] = Object.keys(r.overhead)
  const plain = r.overhead[plainName].median
  const budgeted = r.overhead[budgetName].median
  table(['system (one delegation, interleaved)', 'µs/call median (min–max)', 'vs shipped defaults'],
    Object.entries(r.overhead).map(([name, s]) => [name, fmtStats(s), `${fmt(s.median / plain, 2)}×`]))
  const wide = stats(r.wide.ms)
  log(`A model step asking for 5,000 \`subagent\` calls (shipped defaults: ${r.wide.ran} run, ${r.wide.refused} answered with an error): ${fmtStats(wide, ' ms')} wall, heap ${fmtStats(stats(r.wide.heapMiB), ' MiB', 1)} after the run (before GC), ${r.wide.ms.length} reps.`)
  log()
  log(`Cancelling a ${r.deep.depth.toLocaleString('en')}-deep chain (limits raised to allow it): built in ${fmtStats(stats(r.deep.buildMs), ' ms')}, cancelled (abort → the root's result) in ${fmtStats(stats(r.deep.cancelMs), ' ms')}, ${r.deep.buildMs.length} reps. The cascade runs without recursion proportional to depth.`)
  log()
  const stepUs = r.stepNs.median / 1000
  targets.push(['budget bookkeeping ≤ 5 µs per step', stepUs <= 5, `${fmt(r.stepNs.median)} ns`, 'wall'])
  headline.push(['tree limits', `budget bookkeeping ${fmt(r.stepNs.median)} ns per step; budgets on every limit ${fmt(budgeted / plain, 2)}× a delegation; a 10,000-deep chain cancels in ${fmt(stats(r.deep.cancelMs).median)} ms`, '—'])
  log(`Budgets on every limit: ${fmt(budgeted - plain)} µs per delegation over the shipped defaults in this run (${fmt(budgeted / plain, 2)}×); compare it with the min–max spread of the two rows above before reading a cost into it. What a budget adds per run: one carved \`Budget\`, the checks and charges above, and a timer for a run whose \`maxWallMs\` is tighter than its parent's.`)
  log()
}

// 8 -------------------------------------------------------------------------------------------
{
  const marks = [1, 3, 100, 1000]
  const r = await growth({ marks, window: q(10, 2), reps: q(15, 1) })
  const last = marks[marks.length - 1]
  log('## 8. History growth: one delegation per parent turn over 1,000+ turns')
  log()
  log(`One conversation per rep and tool: every parent turn delegates once (parent step → child step → parent step), so the parent's transcript grows by 4 messages a turn. A mark's figure is the mean µs of the ${r.window} turns from that mark (their transcript lengths in the head), medianed over ${r.reps} reps (min–max). With \`subagent_fork\` every child starts from all of the parent's completed turns (fork seeding cost as history grows); with \`subagent\` (spawn) it is the parent's own per-turn cost as its transcript grows. In the fork and spawn rows every model call reads every message it is given (three calls a turn, each over the whole history), as an adapter's mapping does: that reading is O(history) by nature, and is in these figures; the row "${NOT_READING}" is the fork conversation with a model that reads only the last message (the framework's own cost, the target's). Wall clock.`)
  log()
  const span = (mark: number) => `turn ${mark.toLocaleString('en')} (${r.messagesAt[mark].toLocaleString('en')}–${(r.messagesAt[mark] + 4 * r.window).toLocaleString('en')} msgs)`
  table(['tool', ...marks.map((mark) => `µs per turn at ${span(mark)}`), `${last.toLocaleString('en')} turns, ms total`],
    Object.entries(r.marks).map(([name, byMark]) => [name, ...marks.map((mark) => fmtStats(byMark[mark])), fmtStats(r.totalMs[name])]))
  const fork = r.marks.fork
  const spawn = r.marks.spawn
  const forkGrowth = fork[last].median / fork[1].median
  const turnGrowth = spawn[last].median / spawn[3].median
  const forkTotal = r.totalMs.fork.median
  const read = (mark: number) => r.readingUs[mark].median
  const framework = (fork[last].median - read(last)) / (fork[1].median - read(1))
  log(`The model's own reading per turn, apart (three reads of the parent's messages in a bare loop, µs): ${marks.map((mark) => `turn ${mark.toLocaleString('en')} ${fmtStats(r.readingUs[mark])}`).join('; ')}. A fork turn at turn ${last.toLocaleString('en')} less that reading is ${fmt(framework, 2)}× the same at turn 1 (not a target: the reading is the model's, and O(history) by nature).`)
  log()
  targets.push(ratioTarget('fork delegation at turn 1,000 ≤ 1.3× at turn 1, model does not read (paired by conversation)', r.marks[NOT_READING][last].samples!,
    r.marks[NOT_READING][1].samples!, { atMost: 1.3 }, { clock: 'wall', unit: 'µs', note: `with a reading model ${fmt(forkGrowth, 2)}× by medians` }))
  targets.push(['a 1,000-turn forked conversation ≤ 0.1 s total', forkTotal <= 100, `${fmt(forkTotal)} ms`, 'wall'])
  targets.push(ratioTarget(`turn cost at ≈ ${r.messagesAt[last].toLocaleString('en')} messages ≤ 1.2× at ≈ ${r.messagesAt[3]} (spawn parent, paired by conversation)`,
    spawn[last].samples!, spawn[3].samples!, { atMost: 1.2 }, { clock: 'wall', unit: 'µs', note: `${fmt(turnGrowth, 2)}× by medians` }))
  headline.push(['fork delegation as the parent\'s history grows', `${fmt(fork[1].median)} µs at turn 1, ${fmt(fork[last].median)} µs at turn 1,000 (${fmt(forkGrowth, 2)}×); 1,000 forked turns in ${fmt(forkTotal)} ms`,
    `spawn parent turn ${fmt(spawn[3].median)} µs at ${r.messagesAt[3]} messages, ${fmt(spawn[last].median)} µs at ${r.messagesAt[last].toLocaleString('en')}`])
}

// 9 -------------------------------------------------------------------------------------------
{
  const r = await telemetry(PAIRED)
  const off = r.stats[TELEMETRY_SYSTEMS.off].mean
  const noop = r.stats[TELEMETRY_SYSTEMS.noop].mean
  const recording = r.stats[TELEMETRY_SYSTEMS.recording].mean
  log('## 9. Tracing: @cordis-subagents/telemetry on vs off, per delegation')
  log()
  log(`One delegation (subagent → spawn), interleaved, ${r.stats[TELEMETRY_SYSTEMS.off].n} rounds × ${PAIRED.batch} calls. "No SDK": the plugin loaded with only \`@opentelemetry/api\` (no SDK registered: it declines every run). "Recording": the OpenTelemetry SDK (\`BasicTracerProvider\` + \`BatchSpanProcessor\`) records every span into an exporter that only counts them (${fmt(r.spansPerDelegation, 1)} spans per delegation); exporting them over the network is the host's cost, not measured here.`)
  log()
  table(['system', 'µs/call (CPU): **mean with GC** · median (min–max) · GC share', 'vs not loaded (means)'],
    Object.entries(r.stats).map(([name, s]) => [name, fmtMean(s), `${fmt(s.mean / off, 2)}×`]))
  log(`A/A (two identical hosts without telemetry, paired by round): ${pairedFigure(r.stats[TELEMETRY_SYSTEMS.twin].samples!, r.stats[TELEMETRY_SYSTEMS.off].samples!, 'µs')}: the spread two identical systems show in this run, i.e. the finest ratio it can resolve.`)
  log()
  targets.push(ratioTarget('telemetry loaded without an SDK ≤ 1.1× not loaded (paired by round)', r.stats[TELEMETRY_SYSTEMS.noop].samples!, r.stats[TELEMETRY_SYSTEMS.off].samples!,
    { atMost: 1.1 }, { clock: 'CPU', unit: 'µs' }))
  headline.push(['tracing a delegation (7 spans)', `${fmt(recording / off, 2)}× with the SDK recording, ${fmt(noop / off, 2)}× loaded without an SDK`, `not loaded: ${fmt(off)} µs`])
}

// 10 ------------------------------------------------------------------------------------------
{
  const r = await background(PAIRED)
  const syncName = 'sync: subagent → spawn (3 model calls)'
  const sync = r.stats[syncName].median
  log('## 10. Background delegation: start + collect vs a synchronous delegation (µs per delegation)')
  log()
  log(`${r.rounds} rounds × ${r.batch} delegations per system, each in a fresh parent. Sync: parent step calls \`subagent\` → child step → parent step. Background: parent step calls \`subagent_bg\` (mode: background; returns a handle) → the child runs detached → either the parent's next step calls \`subagent_wait\` and a third step answers, or the parent answers at once, its turn waits (onTurnEnd: wait) and a third step reads the result as a message. The background paths make one model call more than sync (the start's own step). Of the wait runs, ${r.collectedByWait} results were collected by the wait and ${r.deliveredAsMessage} had already arrived as a message (zero-latency child).`)
  log()
  table(['system', 'µs/delegation median (min–max)', '÷ sync'],
    Object.entries(r.stats).map(([name, s]) => [name, fmtStats(s), name === syncName ? '—' : `${fmt(s.median / sync, 2)}×`]))
  const waitCost = r.stats['background: start + subagent_wait (4 model calls)'].median
  const messageCost = r.stats['background: start + result as a message (4 model calls)'].median
  targets.push(ratioTarget('background start + wait ≤ 2× a synchronous delegation (paired by round)', r.stats['background: start + subagent_wait (4 model calls)'].samples!,
    r.stats[syncName].samples!, { atMost: 2 }, { clock: 'wall', unit: 'µs' }))
  headline.push(['background delegation (start, then collect)', `${fmt(waitCost)} µs with subagent_wait, ${fmt(messageCost)} µs as a message`, `synchronous delegation ${fmt(sync)} µs`])
}

// 11 ------------------------------------------------------------------------------------------
await checkpointsSection({ log, targets, headline, quick })

// 12. Serving ---------------------------------------------------------------------------------
{
  const r = await serving({ ...SERVING, ...quick ? { rounds: 2, batch: 10, slices: 2, warmup: 1 } : {} })
  const section = servingLines(r)
  for (const line of section.lines) log(line)
  targets.push(...section.targets)
}

// 13. A 429 storm (issue 44) ---------------------------------------------------------------------
await rateLimitSection({ log, headline, quick })

// 1 (run last, printed first) -------------------------------------------------------------------
{
  const at = { out: out.length, targets: targets.length, headline: headline.length }
  const r = await overhead(PAIRED)
  const report = overheadReport(r.stats, 'interleaved')
  log('## 1. Delegation overhead (µs per delegated call)')
  log()
  log(`${r.rounds} rounds × ${r.batch} calls per system, all five interleaved in this process, by the process' CPU time; each round is a pair for the targets' paired ratios (the same systems, each in fresh processes of its own: section 1b). Every model reads every message it is given. Peers: \`@openai/agents\` 0.14 (asTool, fake Model, tracing disabled; its last line on openai 6, whose engines fit Node 20), \`ai\` 6 (generateText + MockLanguageModelV3, child generateText inside a tool).`)
  log()
  table(report.head, report.rows)
  targets.push(...report.targets)
  headline.push(['one delegation (parent step → child step → parent step), mean CPU time with GC',
    `${fmt(report.spawn)} µs (spawn), ${fmt(report.fork)} µs (fork)`,
    `OpenAI Agents SDK ${fmt(report.openai)} µs (${fmt(report.openai / report.spawn, 1)}× slower), AI SDK ${fmt(report.aisdk)} µs (${fmt(report.aisdk / report.spawn, 1)}× slower); no-framework floor ${fmt(report.floor)} µs`])
  out.splice(section1.out, 0, ...out.splice(at.out))
  targets.splice(section1.targets, 0, ...targets.splice(at.targets))
  headline.splice(section1.headline, 0, ...headline.splice(at.headline))
}

// Hand the run to run.ts --------------------------------------------------------------------------
writeFileSync(process.env.BENCH_OUT ?? '/dev/stdout', JSON.stringify({ out, targets, headline, seconds: (performance.now() - started) / 1000 }))
