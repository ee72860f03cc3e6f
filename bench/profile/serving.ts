/**
 * Section 12 of `npm run bench` alone (serve-mcp and serve-a2a against bare SDK servers running the
 * same agents), not part of `npm run bench`. Prints server CPU per call and throughput per system, and
 * the paired ratios ours ÷ bare.
 *
 *   tsc -b && node --expose-gc --import tsx --conditions=cordis-subagents-source bench/profile/serving.ts [rounds] [batch]
 *
 * To profile servers, name them (comma-separated):
 *   SERVING_PROFILE=a2a-ours,a2a-bare node --import tsx --conditions=cordis-subagents-source bench/profile/serving.ts 10
 * (each named server writes a CPU profile to /tmp/prof-<system>).
 */
import { fmtStats } from '../lib.js'
import { serving } from '../scenarios/serving.js'

const r = await serving({ rounds: Number(process.argv[2] ?? 10), batch: Number(process.argv[3] ?? 200), inFlight: 4, warmup: 2 })
for (const system of Object.keys(r.cpuUs) as Array<keyof typeof r.cpuUs>) {
  console.log(`${system}: server CPU ${fmtStats(r.cpuUs[system])} µs per call, ${fmtStats(r.perSecond[system])} calls/s`)
}
for (const protocol of ['mcp', 'a2a'] as const) {
  console.log(`${protocol} ours ÷ bare per round: CPU ${fmtStats(r.cpuRatio[protocol], '×', 2)}, throughput ${fmtStats(r.throughputRatio[protocol], '×', 2)}`)
}
