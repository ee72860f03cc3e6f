/**
 * Start-up and steady windows of a fresh process (issue 42 item 3). A fresh process first runs
 * a start-up window (JIT, inline caches, the first heap growths and their collections) and then
 * a steady window of the same length; targets use the steady window, the start-up window is
 * reported apart as start-up cost.
 */
import { mean } from './stats.js'

export interface Windows { startup: number[]; steady: number[] }

/** Splits samples (in the order taken) into the first `startup` and the rest. */
export function splitWindows(samples: readonly number[], startup: number): Windows {
  if (!Number.isInteger(startup) || startup < 1) throw new RangeError(`splitWindows: the start-up window must be a positive integer, got ${startup}`)
  if (samples.length <= startup) throw new RangeError(`splitWindows: ${samples.length} samples leave no steady window after a start-up window of ${startup}`)
  return { startup: samples.slice(0, startup), steady: samples.slice(startup) }
}

/** What the start-up window cost over steady state: extra per sample (its unit) and in total over the window. */
export interface StartupCost { startupMean: number; steadyMean: number; extraPerSample: number; extraTotal: number; factor: number }

export function startupCost(windows: Windows): StartupCost {
  const startupMean = mean(windows.startup)
  const steadyMean = mean(windows.steady)
  const extraPerSample = startupMean - steadyMean
  return { startupMean, steadyMean, extraPerSample, extraTotal: extraPerSample * windows.startup.length, factor: startupMean / steadyMean }
}
