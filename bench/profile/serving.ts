/**
 * Section 12 of `npm run bench` alone (serve-mcp and serve-a2a against bare SDK servers running the same
 * agents, and the A/A rows), not part of `npm run bench`: `runs` runs (default 1), each with fresh server
 * processes and section 12's rounds, printing the section as RESULTS.md would and, at the end, every run's
 * figure of each target (met only if met in every run). Built packages, as `npm run bench` runs them:
 *
 *   npx tsc -b && node --expose-gc --import tsx bench/profile/serving.ts [runs] [rounds] [batch] [slices]
 *
 * To profile servers, name them (comma-separated); each named server writes a CPU profile to /tmp/prof-<system>:
 *   SERVING_PROFILE=a2a-ours,a2a-bare node --expose-gc --import tsx bench/profile/serving.ts 1 6
 */
import { serving, SERVING } from '../scenarios/serving.js'
import { servingLines } from '../scenarios/serving-report.js'
import type { Target } from '../targets.js'

const [runs = 1, rounds = SERVING.rounds, batch = SERVING.batch, slices = SERVING.slices] = process.argv.slice(2).map(Number)
const byTarget = new Map<string, Target[]>()
for (let run = 1; run <= runs; run++) {
  const { lines, targets } = servingLines(await serving({ ...SERVING, rounds, batch, slices }))
  console.log(`# run ${run} of ${runs}\n`)
  console.log(lines.join('\n'))
  for (const target of targets) byTarget.set(target[0], [...byTarget.get(target[0]) ?? [], target])
}
console.log(`# targets over ${runs} run(s): met only if met in every run\n`)
for (const [name, targets] of byTarget) {
  console.log(`- ${name}: **${targets.every(([, met]) => met) ? 'met' : 'not met'}**`)
  for (const [, met, figure] of targets) console.log(`  - ${met ? 'met' : 'no'}: ${figure}`)
}
