import { fmt, fmtMean, type Stats } from './lib.js'
import { OVERHEAD } from './scenarios/overhead.js'

/** A target of one run: its name, whether it held, the figure that says by how much. */
export type Target = [name: string, met: boolean, figure: string]

/**
 * Section 1's table rows and targets from the five systems' stats (interleaved in one process, or
 * each in a fresh process). Targets compare means: GC included.
 */
export function overheadReport(r: Record<string, Stats>, label: string) {
  const floor = r[OVERHEAD.floor].mean
  const openai = r[OVERHEAD.openai].mean
  const aisdk = r[OVERHEAD.aisdk].mean
  const head = ['system', 'µs/call: **mean with GC** · median (min–max) · GC share', 'overhead µs (mean − floor mean)', 'OpenAI Agents SDK time ÷ this', 'AI SDK time ÷ this']
  const rows = Object.values(OVERHEAD).map((name) => {
    const s = r[name]
    return [name, fmtMean(s), name === OVERHEAD.floor ? '—' : fmt(s.mean - floor), `${fmt(openai / s.mean, 2)}×`, `${fmt(aisdk / s.mean, 2)}×`]
  })
  const targets: Target[] = []
  for (const name of [OVERHEAD.spawn, OVERHEAD.fork]) {
    const ours = r[name].mean
    const x = Math.min(openai, aisdk) / ours
    targets.push([`one delegation ≤ 10× the no-framework floor (${name}; ${label})`, ours <= 10 * floor, `${fmt(ours / floor, 1)}× (${fmt(ours)} vs ${fmt(floor)} µs)`])
    targets.push([`≥ 15× faster than both peers (${name}; ${label})`, x >= 15, `${fmt(x, 2)}× (OpenAI ${fmt(openai / ours, 2)}×, AI SDK ${fmt(aisdk / ours, 2)}×)`])
  }
  return { head, rows, targets, floor, openai, aisdk, spawn: r[OVERHEAD.spawn].mean, fork: r[OVERHEAD.fork].mean }
}
