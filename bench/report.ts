import { fmt, fmtMean, type Stats } from './lib.js'
import { overheadReport, type Target } from './overhead-report.js'
import { OVERHEAD, type OverheadSystem } from './scenarios/overhead.js'

/** What one run (single.ts) hands back. */
export interface RunOutput {
  out: string[]
  targets: Target[]
  headline: Array<[string, string, string]>
  seconds: number
}

/** One run's section 1 measured with each system in a fresh process of its own. */
export type FreshRun = Record<OverheadSystem, Stats>

export interface Aggregate {
  /** Every target of any run, in first-seen order: met only if it was met in every run. */
  targets: Array<{ name: string; met: boolean; figures: string[] }>
  lines: string[]
}

/** The fresh-process table (one column per run) and its targets, appended to each run's own targets. */
export function freshSection(runs: RunOutput[], fresh: FreshRun[]): string[] {
  const lines = ['## 1b. Delegation overhead, each system in a fresh process', '',
    `Section 1 again, but every system runs alone in a process of its own (one process per system and run): no other system's heap, JIT state or async hooks (the OpenAI Agents SDK's AsyncLocalStorage) share it. Same rounds and batches as section 1. Per run: **mean with GC** · median (min–max) · GC share.`, '',
    `| system | ${fresh.map((_, i) => `run ${i + 1}`).join(' | ')} |`, `|---|${fresh.map(() => '---').join('|')}|`]
  for (const key of Object.keys(OVERHEAD) as OverheadSystem[]) {
    lines.push(`| ${OVERHEAD[key]} | ${fresh.map((run) => fmtMean(run[key])).join(' | ')} |`)
  }
  lines.push('')
  fresh.forEach((run, i) => {
    const byName = Object.fromEntries((Object.keys(OVERHEAD) as OverheadSystem[]).map((key) => [OVERHEAD[key], run[key]]))
    runs[i].targets.push(...overheadReport(byName, 'fresh processes').targets)
  })
  return lines
}

/** Targets across runs: the figure of each run side by side (the spread), met only if met in every run. */
export function aggregate(runs: RunOutput[]): Aggregate {
  const byName = new Map<string, { met: boolean; figures: string[] }>()
  runs.forEach((run, i) => {
    for (const [name, met, figure] of run.targets) {
      const entry = byName.get(name) ?? { met: true, figures: Array<string>(runs.length).fill('(not measured)') }
      entry.met &&= met
      entry.figures[i] = met ? figure : `**${figure}**`
      byName.set(name, entry)
    }
  })
  // A target missing from a run was not shown to hold in it.
  for (const entry of byName.values()) if (entry.figures.includes('(not measured)')) entry.met = false
  const targets = [...byName].map(([name, entry]) => ({ name, ...entry }))
  const lines = [`## Targets (${runs.length} runs; met only if met in every run)`, '',
    `A figure in bold missed its target in that run. Run times: ${runs.map((run) => `${fmt(run.seconds)} s`).join(', ')}.`, '',
    `| target | met | ${runs.map((_, i) => `run ${i + 1}`).join(' | ')} |`, `|---|---|${runs.map(() => '---').join('|')}|`,
    ...targets.map((t) => `| ${t.name} | ${t.met ? 'yes' : '**no**'} | ${t.figures.join(' | ')} |`), '']
  return { targets, lines }
}
