import { fmt, stats } from '../lib.js'
import { spread, SPREAD } from '../stats.js'
import type { Target } from '../targets.js'
import { checkpointsCost, CPU_SOURCE, type StoreResult } from './checkpoints.js'

// Section 11 of `npm run bench` (bench/single.ts calls `checkpointsSection`): the table and the
// targets of the checkpoints row from `checkpointsCost`'s results.

const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length

/** The table (markdown lines) and the targets: per store, CPU ≤ 1.3× no store and ≤ 0.5 ms added at every size, flat across sizes. */
export function checkpointsLines(results: StoreResult[]): { lines: string[]; targets: Target[] } {
  const lines = [
    '| stored runs | store | main-thread CPU µs / delegation (mean) | × no store: paired median (p10–p90; min–max) | wall µs / delegation (mean) | added latency | writes · batches · minato statements / delegation |',
    '|---|---|---|---|---|---|---|',
  ]
  const targets: Target[] = []
  type Row = { size: number; ratio: ReturnType<typeof stats>; paired: ReturnType<typeof spread>; added: number; cpu: number }
  const byStore = new Map<string, Row[]>()
  let none: StoreResult | undefined
  for (const r of results) {
    if (r.store === 'none') {
      none = r
      const phase = results.slice(results.indexOf(r) + 1).find((next) => next.store === 'sqlite' || next.store === 'postgres')?.storedRuns
      lines.push(`| ${phase === undefined ? '—' : phase.toLocaleString('en')} | no store | ${fmt(mean(r.cpuUs))} | — | ${fmt(mean(r.wallUs))} | — | — |`)
      continue
    }
    const ratio = stats(r.ratios)
    const paired = spread(r.ratios)
    const ratioCell = `${fmt(paired.median, 2)}× (${fmt(paired.low, 2)}–${fmt(paired.high, 2)}; ${fmt(ratio.min, 2)}–${fmt(ratio.max, 2)})`
    const added = (mean(r.wallUs) - mean(none!.wallUs)) / 1000
    if (r.store === 'idle' || r.store === 'twin') {
      // No target: the control (what idling once per delegation costs the main thread) and the A/A row
      // (a second no-store host: the spread the pairing shows where there is no difference to find).
      const name = r.store === 'idle' ? 'no store, idle once (control)' : 'no store, a second host (A/A)'
      lines.push(`| — | ${name} | ${fmt(mean(r.cpuUs))} | ${ratioCell} | ${fmt(mean(r.wallUs))} | ${added >= 0 ? '+' : ''}${fmt(added, 2)} ms | — |`)
      continue
    }
    lines.push(`| ${r.storedRuns.toLocaleString('en')} | ${r.store} | ${fmt(mean(r.cpuUs))} | ${ratioCell} `
      + `| ${fmt(mean(r.wallUs))} | ${added >= 0 ? '+' : ''}${fmt(added, 2)} ms | ${fmt(r.writes, 2)} · ${fmt(r.batches, 2)} · ${fmt(r.minatoStatements, 2)} |`)
    const rows = byStore.get(r.store) ?? []
    rows.push({ size: r.storedRuns, ratio, paired: spread(r.ratios), added, cpu: mean(r.cpuUs) - mean(none!.cpuUs) })
    byStore.set(r.store, rows)
  }
  for (const [store, rows] of byStore) {
    // Met only if the whole p10–p90 spread of the paired ratios is inside the bound, at every size (bench/stats.ts).
    const worstHigh = Math.max(...rows.map((row) => row.paired.high))
    const worstAdded = Math.max(...rows.map((row) => row.added))
    const at = (pick: (row: (typeof rows)[number]) => string) => rows.map((row) => `${row.size.toLocaleString('en')}: ${pick(row)}`).join(', ')
    const pct = (q: number) => `p${Math.round(q * 100)}`
    targets.push([`checkpoints on ${store}: a delegation's main-thread CPU ≤ 1.3× no store (paired ${pct(SPREAD.low)}–${pct(SPREAD.high)}, every size)`, worstHigh <= 1.3,
      at((row) => `median ${fmt(row.paired.median, 2)}×, ${fmt(row.paired.low, 2)}–${fmt(row.paired.high, 2)}× (${row.paired.n} pairs)`), 'CPU'])
    targets.push([`checkpoints on ${store}: ≤ 0.5 ms added latency per delegation (every size)`, worstAdded <= 0.5, at((row) => `+${fmt(row.added, 2)} ms`), 'wall'])
    if (rows.length > 1) {
      const first = rows[0]
      const last = rows[rows.length - 1]
      // Flat: the store's own CPU per delegation at the largest size within 1.2× the smallest's, or within 20 µs (noise on a small cost).
      const growth = last.cpu / first.cpu
      targets.push([`checkpoints on ${store}: flat from ${first.size.toLocaleString('en')} to ${last.size.toLocaleString('en')} stored runs (store CPU ≤ 1.2×, or ≤ 20 µs more)`,
        growth <= 1.2 || last.cpu - first.cpu <= 20, `${fmt(first.cpu)} → ${fmt(last.cpu)} µs over no store (${fmt(growth, 2)}×)`, 'CPU'])
    }
  }
  return { lines, targets }
}

interface SectionOptions {
  log(line?: string): void
  targets: Target[]
  headline: Array<[string, string, string]>
  quick: boolean
}

/** Section 11: SQLite always, PostgreSQL when CHECKPOINTS_PG_URL names a database of your own. */
export async function checkpointsSection({ log, targets, headline, quick }: SectionOptions): Promise<void> {
  const pgUrl = process.env.CHECKPOINTS_PG_URL
  const stores: Array<'sqlite' | 'postgres'> = pgUrl ? ['sqlite', 'postgres'] : ['sqlite']
  const sizes = [1000, quick ? 10_000 : 100_000]
  const results: StoreResult[] = []
  for (const [index, storedRuns] of sizes.entries()) {
    // Pairs of 1,000 delegations a side (slices of 25, alternating): the A/A row shows what that resolves.
    // The control and the A/A row are the machine's and the method's, not a size's: measured at the first size.
    results.push(...await checkpointsCost({
      stores, storedRuns, pgUrl, rounds: quick ? 2 : 20, batch: quick ? 50 : 1000, warmup: quick ? 1 : 2,
      control: index === 0, twin: index === 0,
    }))
  }
  const { lines, targets: met } = checkpointsLines(results)
  log('## 11. Checkpoints: a delegation with ctx.checkpoints loaded vs no store')
  log()
  log(`One sync delegation (subagent → spawn) with \`@cordis-subagents/checkpoints\` loaded, against the same delegation with no store, paired in this process (each pair: 1,000 delegations of the store and 1,000 of no store, run in slices of 25 taken in turn, the order alternating; 20 pairs per store and size), with that many settled runs already stored. The A/A row pairs a second, identical no-store host the same way: its p10–p90 spread is what this pairing resolves on this machine, and a store's spread means something only if that one is well inside 1 ± 0.15. CPU is ${CPU_SOURCE === 'main-thread' ? 'the main thread\'s own (its /proc schedstat: not GC helper threads, not libuv\'s pool)' : 'the process\' (no per-thread figure on this system)'}, per side of a pair, the store's queued writes written (and waited for) every 100 of its delegations and at the end of its side, where every side (no store's too) then turns the event loop once, as a host does between its model calls (a turn runs the work V8 deferred to it from both sides' slices, which only a side that turns would pay for; \`CHECKPOINTS_TURN=store\` turns only a store's side, as this section did before); the control row is the no-store delegation whose main thread then idles once (a 0 ms timer, about 1 ms asleep), as one whose result waits for a writer thread does: what idling and waking alone cost the main thread on this machine. Wall time is each delegation's, whose result waits for its record. Writes are the store's direct writes; batches, the transactions (SQLite) or pipelines (PostgreSQL) they went in; minato statements, everything else that reached the database. ${pgUrl ? 'PostgreSQL: CHECKPOINTS_PG_URL.' : 'PostgreSQL not measured: set CHECKPOINTS_PG_URL to a database of your own.'}`)
  log()
  for (const line of lines) log(line)
  log()
  targets.push(...met)
  const sqlite = results.filter((r) => r.store === 'sqlite').at(-1)
  if (sqlite) {
    const at = sqlite.storedRuns.toLocaleString('en')
    headline.push(['a delegation with checkpoints (SQLite)', `${fmt(stats(sqlite.ratios).median, 2)}× main-thread CPU at ${at} stored runs`, 'no store'])
  }
}
