import { fmt, fmtMean, type Stats } from './lib.js'
import { OVERHEAD, type OverheadSystem } from './scenarios/overhead.js'
import { pairwiseMin } from './stats.js'
import { type Clock, ratioTarget, type Target } from './targets.js'

export type { Target } from './targets.js'

/** Issue 42's bounds for one delegation: at most this many times the no-framework floor (means), peers at least this many times slower. */
const FLOOR_BOUND = 15
const PEER_BOUND = 10

/**
 * Section 1's targets from the five systems' samples taken in pairs (rounds of one process, or
 * sets of fresh processes): for spawn and fork, ours ÷ the floor and the faster peer (per pair) ÷ ours.
 * Issue 42 states them on means: the ratio of the means must hold as well as the paired spread.
 */
export function overheadTargets(samples: Record<OverheadSystem, number[]>, label: string, clock: Exclude<Clock, '—'>): Target[] {
  const peers = pairwiseMin(samples.openai, samples.aisdk)
  const targets: Target[] = []
  for (const key of ['spawn', 'fork'] as const) {
    targets.push(ratioTarget(`one delegation ≤ ${FLOOR_BOUND}× the no-framework floor (${OVERHEAD[key]}; ${label})`, samples[key], samples.floor,
      { atMost: FLOOR_BOUND }, { clock, unit: 'µs', means: true }))
    targets.push(ratioTarget(`peers ≥ ${PEER_BOUND}× slower than us (the faster per pair ÷ ${OVERHEAD[key]}; ${label})`, peers, samples[key],
      { atLeast: PEER_BOUND }, { clock, unit: 'µs', means: true }))
  }
  return targets
}

/**
 * Section 1's table rows and targets from the five systems' stats, interleaved in one process
 * (each Stats with its samples, one per round). Targets compare means (GC included) and the
 * paired ratios' spread.
 */
export function overheadReport(r: Record<string, Stats>, label: string) {
  const floor = r[OVERHEAD.floor].mean
  const openai = r[OVERHEAD.openai].mean
  const aisdk = r[OVERHEAD.aisdk].mean
  const clock = r[OVERHEAD.floor].clock ?? 'wall'
  const head = ['system', `µs/call (${clock}): **mean with GC** · median (min–max) · GC share`, 'overhead µs (mean − floor mean)', 'OpenAI Agents SDK time ÷ this', 'AI SDK time ÷ this']
  const rows = Object.values(OVERHEAD).map((name) => {
    const s = r[name]
    return [name, fmtMean(s), name === OVERHEAD.floor ? '—' : fmt(s.mean - floor), `${fmt(openai / s.mean, 2)}×`, `${fmt(aisdk / s.mean, 2)}×`]
  })
  const samples = Object.fromEntries((Object.keys(OVERHEAD) as OverheadSystem[]).map((key) => {
    const list = r[OVERHEAD[key]].samples
    if (!list) throw new Error(`overheadReport: no samples for ${OVERHEAD[key]} (paired ratios need them)`)
    return [key, list]
  })) as Record<OverheadSystem, number[]>
  const targets = overheadTargets(samples, label, clock)
  return { head, rows, targets, floor, openai, aisdk, spawn: r[OVERHEAD.spawn].mean, fork: r[OVERHEAD.fork].mean }
}
