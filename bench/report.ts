import { fmt } from './lib.js'
import type { Clock, RatioDetail, Target } from './targets.js'

/** What one run (single.ts) hands back. */
export interface RunOutput {
  out: string[]
  targets: Target[]
  headline: Array<[string, string, string]>
  seconds: number
}

interface AggregateTarget {
  name: string
  /** Met only if it was met in every run (and measured in every run). */
  met: boolean
  clock: Clock | '(not labelled)'
  /** Each run's figure; bold where it missed. */
  figures: string[]
  /** Each run's paired figures, for a ratio target (null where the run had none). */
  details: Array<RatioDetail | null>
  /** Each run's verdict (null: not measured in that run). */
  metByRun: Array<boolean | null>
}

export interface Aggregate {
  /** Every target of any run, in first-seen order. */
  targets: AggregateTarget[]
  lines: string[]
}

/** Targets across runs: the figure of each run side by side (the spread over runs), met only if met in every run. */
export function aggregate(runs: RunOutput[]): Aggregate {
  const byName = new Map<string, AggregateTarget>()
  runs.forEach((run, i) => {
    for (const [name, met, figure, clock, detail] of run.targets) {
      const entry = byName.get(name) ?? {
        name, met: true, clock: clock ?? '(not labelled)', figures: Array<string>(runs.length).fill('(not measured)'),
        details: Array<RatioDetail | null>(runs.length).fill(null), metByRun: Array<boolean | null>(runs.length).fill(null),
      }
      entry.met &&= met
      entry.figures[i] = met ? figure : `**${figure}**`
      entry.details[i] = detail ?? null
      entry.metByRun[i] = met
      byName.set(name, entry)
    }
  })
  // A target missing from a run was not shown to hold in it.
  for (const entry of byName.values()) if (entry.metByRun.includes(null)) entry.met = false
  const targets = [...byName.values()]
  const lines = [`## Targets (${runs.length} runs; met only if met in every run)`, '',
    `A figure in bold missed its target in that run. The clock column says whether the figures are the process' CPU time or wall-clock time (— : not a time). A ratio target ("paired" in its figure) is met only if the whole p10–p90 spread of its paired ratios is inside the bound, and a target stated on means (section 1's) only if the ratio of the means is too (bench/README.md, Method). Run times: ${runs.map((run) => `${fmt(run.seconds)} s`).join(', ')}.`, '',
    `| target | clock | met | ${runs.map((_, i) => `run ${i + 1}`).join(' | ')} |`, `|---|---|---|${runs.map(() => '---').join('|')}|`,
    ...targets.map((t) => `| ${t.name} | ${t.clock} | ${t.met ? 'yes' : '**no**'} | ${t.figures.join(' | ')} |`), '']
  return { targets, lines }
}
