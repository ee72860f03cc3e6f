/**
 * The warm ACP spare against the protocol floor (section 5b of `npm run bench`, alone), not part of
 * `npm run bench`. Prints each system's ms to the result and the warm spare's ratio to the floor.
 *
 *   tsc -b && node --expose-gc --import tsx bench/profile/acp-warm.ts [iterations]
 *   node --expose-gc --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/profile/acp-warm.ts 30
 */
import { Logger } from 'cordis'
import { fmt, fmtStats } from '../lib.js'
import { warmAcp } from '../scenarios/acp.js'

Logger.levels.base = 1
const iterations = Number(process.argv[2] ?? 30)
const r = await warmAcp({ iterations, warmup: 3 })
const floor = r.result['protocol floor: hand client, live initialized process (session/new → prompt)'].median
for (const [name, s] of Object.entries(r.result)) console.log(`${name}: ${fmtStats(s)} ms to result (${fmt(s.median / floor, 2)}× the floor)`)
