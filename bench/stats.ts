/**
 * The statistics behind every ratio target (issue 42 item 3): paired ratios and their spread.
 *
 * A ratio of two means flips with garbage collection: one collection landing in A's batches and
 * not in B's moves the mean of A alone. Measured in pairs (A and B one right after the other,
 * the order alternating), each pair gives one ratio taken under the same conditions, and the
 * spread of those ratios says how far one run's figure can be trusted.
 */

/** Which percentiles of the paired ratios are the spread: p10–p90 (issue 42). Change it here only. */
export const SPREAD = { low: 0.1, high: 0.9 } as const

/**
 * The q-quantile of samples (0 ≤ q ≤ 1), linear between the two nearest order statistics (the
 * usual "type 7" definition: position q·(n − 1) in the sorted samples).
 */
export function quantile(samples: readonly number[], q: number): number {
  if (!samples.length) throw new RangeError('quantile: no samples')
  if (!(q >= 0 && q <= 1)) throw new RangeError(`quantile: q must be in [0, 1], got ${q}`)
  const sorted = [...samples].sort((a, b) => a - b)
  const at = q * (sorted.length - 1)
  const below = Math.floor(at)
  const above = Math.ceil(at)
  return sorted[below] + (sorted[above] - sorted[below]) * (at - below)
}

export const mean = (samples: readonly number[]) => samples.reduce((sum, x) => sum + x, 0) / samples.length

/** One ratio per pair: a[i] ÷ b[i]. Both lists hold one sample per pair, in the order they were taken. */
export function pairedRatios(a: readonly number[], b: readonly number[]): number[] {
  if (a.length !== b.length) throw new RangeError(`pairedRatios: ${a.length} samples of A against ${b.length} of B (one of each per pair)`)
  if (!a.length) throw new RangeError('pairedRatios: no pairs')
  return a.map((x, i) => {
    if (!(b[i] > 0)) throw new RangeError(`pairedRatios: pair ${i} divides by ${b[i]}`)
    return x / b[i]
  })
}

/** The spread of paired ratios: its low and high percentiles (SPREAD), the median and the count. */
export interface Spread { low: number; median: number; high: number; n: number }

export function spread(ratios: readonly number[]): Spread {
  return { low: quantile(ratios, SPREAD.low), median: quantile(ratios, 0.5), high: quantile(ratios, SPREAD.high), n: ratios.length }
}

/** A bound a ratio must stay within: at most (A no more than `atMost` × B) or at least. */
export type Bound = { atMost: number } | { atLeast: number }

export const within = (x: number, bound: Bound) => ('atMost' in bound ? x <= bound.atMost : x >= bound.atLeast)

/** The whole spread inside the bound: its high end under an upper bound, its low end over a lower one. */
export const spreadWithin = (s: Spread, bound: Bound) => ('atMost' in bound ? s.high <= bound.atMost : s.low >= bound.atLeast)

/** Element-wise minimum of several systems' samples taken in the same pairs (rounds): the fastest of them per round. */
export function pairwiseMin(...lists: ReadonlyArray<readonly number[]>): number[] {
  const n = lists[0]?.length ?? 0
  if (lists.some((list) => list.length !== n)) throw new RangeError('pairwiseMin: the lists differ in length')
  return Array.from({ length: n }, (_, i) => Math.min(...lists.map((list) => list[i])))
}
