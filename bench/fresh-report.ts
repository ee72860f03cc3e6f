/**
 * Section 1b (each system alone in a fresh process, at steady state) and the start-up cost table.
 * Within a run, the systems' processes are started in sets (one process per system, the order
 * alternating): a set is a pair for the paired ratios of the fresh-process targets.
 */
import { fmt, fmtStats, stats } from './lib.js'
import { overheadTargets } from './overhead-report.js'
import { OVERHEAD, type OverheadSystem } from './scenarios/overhead.js'
import { mean } from './stats.js'
import { startupCost, type Windows } from './steady.js'
import type { Target } from './targets.js'

/** What one fresh process (fresh.ts) hands back: µs per call in its start-up and steady windows, by both clocks. */
export interface FreshSample {
  /** ms from the process' first line to the system built (the peers' import included; our packages are imported before). */
  buildMs: number
  cpu: Windows
  wall: Windows
  /** Share of the timed batches spent in GC (both windows). */
  gcShare: number
}

/** One run's fresh processes: per system, one sample per set (pair), in set order. */
export type FreshRun = Record<OverheadSystem, FreshSample[]>

const KEYS = Object.keys(OVERHEAD) as OverheadSystem[]
const steadyMeans = (samples: FreshSample[], clock: 'cpu' | 'wall') => samples.map((s) => mean(s[clock].steady))

/** The fresh-process targets of one run: steady-window CPU means, paired by set. */
export function freshTargets(run: FreshRun): Target[] {
  return overheadTargets(Object.fromEntries(KEYS.map((key) => [key, steadyMeans(run[key], 'cpu')])) as Record<OverheadSystem, number[]>,
    'fresh processes, steady window', 'CPU')
}

/** Section 1b and the start-up cost table (lines of RESULTS.md). */
export function freshSection(fresh: FreshRun[], windows: { startup: number; steady: number; batch: number }): string[] {
  const sets = fresh[0]?.floor.length ?? 0
  const lines = ['## 1b. Delegation overhead, each system in a fresh process, at steady state', '',
    `Section 1 again, but every system runs alone in a process of its own: no other system's heap, JIT state or async hooks (the OpenAI Agents SDK's AsyncLocalStorage) share it. Per run, ${sets} set(s) of five processes (one per system, the order alternating from set to set); a set is a pair for the targets' paired ratios. Each process runs a start-up window of ${windows.startup} rounds × ${windows.batch} calls right after it built its system, then a steady window of ${windows.steady} rounds more; this table and the targets use the steady window only (the start-up window: next table). Per run: **mean CPU µs/call** over its processes' steady windows · the same by the wall clock · the processes' steady CPU means min–max.`, '',
    `| system | ${fresh.map((_, i) => `run ${i + 1}: CPU · wall · per process (CPU)`).join(' | ')} |`, `|---|${fresh.map(() => '---').join('|')}|`]
  for (const key of KEYS) {
    lines.push(`| ${OVERHEAD[key]} | ${fresh.map((run) => {
      const cpu = steadyMeans(run[key], 'cpu')
      const wall = steadyMeans(run[key], 'wall')
      return `**${fmt(mean(cpu))}** · ${fmt(mean(wall))} · ${fmt(Math.min(...cpu))}–${fmt(Math.max(...cpu))}`
    }).join(' | ')} |`)
  }
  lines.push('', '### Start-up cost (fresh processes)', '',
    `Per system, over every fresh process of every run (median (min–max) over processes): the time to build the system (the peers' import included), µs per call (CPU) in the start-up window (its first ${windows.startup} rounds × ${windows.batch} calls) and in the steady window after it, and what the start-up window cost above steady state in total (ms CPU over its ${windows.startup * windows.batch} calls). Not in any target.`, '',
    '| system | build ms (wall) | start-up window µs/call (CPU) | steady µs/call (CPU) | start-up ÷ steady | start-up extra ms (CPU) |', '|---|---|---|---|---|---|')
  for (const key of KEYS) {
    const all = fresh.flatMap((run) => run[key])
    const costs = all.map((s) => startupCost(s.cpu))
    lines.push(`| ${OVERHEAD[key]} | ${fmtStats(stats(all.map((s) => s.buildMs)))} | ${fmtStats(stats(costs.map((c) => c.startupMean)))} | ${fmtStats(stats(costs.map((c) => c.steadyMean)))} | ${fmtStats(stats(costs.map((c) => c.factor)), '×', 2)} | ${fmtStats(stats(costs.map((c) => (c.extraTotal * windows.batch) / 1000)), '', 2)} |`)
  }
  lines.push('')
  return lines
}
