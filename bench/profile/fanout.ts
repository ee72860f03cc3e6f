/**
 * Fan-out growth (section 2 of `npm run bench`) for a profile, not part of `npm run bench`: one size
 * per process, so two profiles of the same number of children (e.g. 100 × 50 reps and 1,000 × 5
 * reps) compare self time per child, function by function.
 *
 *   node --expose-gc --import tsx bench/profile/fanout.ts [n] [reps]
 *   node --expose-gc --cpu-prof --cpu-prof-dir=/tmp/prof-100 --import tsx bench/profile/fanout.ts 100 50
 *   node --expose-gc --cpu-prof --cpu-prof-dir=/tmp/prof-1000 --import tsx bench/profile/fanout.ts 1000 5
 */
import { fmt, stats } from '../lib.js'
import { fanout } from '../scenarios/fanout.js'

const n = Number(process.argv[2] ?? 1000)
const reps = Number(process.argv[3] ?? 5)
const [row] = await fanout({ sizes: [n], reps })
const wall = stats(row.wallMs)
const kib = stats(row.retainedPerChildKiB)
console.log(`${n} children × ${reps} reps: ${fmt(wall.median)} ms wall per step (${fmt(wall.min)}–${fmt(wall.max)}), ${fmt((wall.median * 1000) / n)} µs per child; retained heap per live child ${fmt(kib.median, 2)} KiB (${fmt(kib.min, 2)}–${fmt(kib.max, 2)})`)
