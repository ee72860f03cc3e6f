/**
 * Targets of a bench run. A ratio target (`ratioTarget`) compares two systems measured in pairs
 * (one sample of each per pair, the order alternating) and is met only if the whole spread of
 * the paired ratios (SPREAD, p10–p90) is inside its bound, and for a target stated on means
 * (`means: true`) the ratio of the means too.
 */
import { fmt } from './lib.js'
import { type Bound, mean, pairedRatios, type Spread, spread, SPREAD, spreadWithin, within } from './stats.js'

/** Which clock a figure was taken with: CPU time of the process, or wall-clock time. '—' for figures that are no time (bytes, counts). */
export type Clock = 'CPU' | 'wall' | '—'

/** A paired ratio's figures, kept for the machine-readable results (BENCH_RESULTS). */
export interface RatioDetail {
  /** Mean of A ÷ mean of B: GC included in both. */
  ratio: number
  meanA: number
  meanB: number
  spread: Spread
  /** The spread's percentiles, e.g. [0.1, 0.9]. */
  percentiles: [number, number]
  bound: Bound
  /** Whether the ratio of the means had to be inside the bound as well as the spread. */
  means: boolean
}

/** A target of one run: its name, whether it held, the figure that says by how much, its clock, the paired figures of a ratio. */
export type Target = [name: string, met: boolean, figure: string, clock?: Clock, detail?: RatioDetail]

const pct = (q: number) => `p${Math.round(q * 100)}`

/**
 * A ratio target: A ÷ B from samples taken in pairs (samplesA[i] and samplesB[i] one right after
 * the other). `name` should state the bound; the figure gives the ratio of means, then the
 * paired ratios' spread and median and the pair count. Met only if the whole spread is inside
 * the bound, and with `means: true` (a target stated on means) the ratio of means too.
 *   ratioTarget('telemetry, no SDK ≤ 1.1× not loaded', noop, off, { atMost: 1.1 }, { clock: 'CPU', unit: 'µs' })
 */
export function ratioTarget(
  name: string, samplesA: readonly number[], samplesB: readonly number[], bound: Bound,
  options: { clock: Exclude<Clock, '—'>; unit?: string; note?: string; means?: boolean },
): Target {
  const { detail, figure } = paired(samplesA, samplesB, bound, options)
  const met = spreadWithin(detail.spread, bound) && (!detail.means || within(detail.ratio, bound))
  return [name, met, figure, options.clock, detail]
}

/**
 * The paired figures of A ÷ B without a verdict: "1.02× by means (…); paired p10–p90 …". For an
 * A/A row (two identical systems), whose spread says how fine a ratio this machine can resolve.
 */
export function pairedFigure(samplesA: readonly number[], samplesB: readonly number[], unit = ''): string {
  return paired(samplesA, samplesB, { atMost: Infinity }, { unit }).figure
}

function paired(
  samplesA: readonly number[], samplesB: readonly number[], bound: Bound, options: { unit?: string; note?: string; means?: boolean },
) {
  const meanA = mean(samplesA)
  const meanB = mean(samplesB)
  const ratio = meanA / meanB
  const s = spread(pairedRatios(samplesA, samplesB))
  const unit = options.unit ?? ''
  const figure = `${fmt(ratio, 2)}× by means (${fmt(meanA)} vs ${fmt(meanB)}${unit ? ` ${unit}` : ''}); paired ${pct(SPREAD.low)}–${pct(SPREAD.high)} ${fmt(s.low, 2)}–${fmt(s.high, 2)}×, median ${fmt(s.median, 2)}×, ${s.n} pair${s.n === 1 ? '' : 's'}${options.note ? `; ${options.note}` : ''}`
  const percentiles: [number, number] = [SPREAD.low, SPREAD.high]
  const detail: RatioDetail = { ratio, meanA, meanB, spread: s, percentiles, bound, means: options.means ?? false }
  return { detail, figure }
}
