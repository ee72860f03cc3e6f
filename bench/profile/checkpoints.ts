/**
 * The checkpoints row on its own (issue 42 item 1; `npm run bench` runs it as section 11):
 *
 *   CHECKPOINTS_PG_URL=postgres://… node --expose-gc --import tsx --conditions=cordis-subagents-source bench/profile/checkpoints.ts
 *
 * For each number of stored runs (CHECKPOINTS_RUNS, default "1000,100000"): the no-store delegation and
 * each store's (CHECKPOINTS_STORES, default "sqlite,postgres"), interleaved; CHECKPOINTS_ROUNDS rounds
 * (default 20) of CHECKPOINTS_BATCH delegations (default 100), and the idle control row (no store, the main thread
 * idling once per delegation; CHECKPOINTS_CONTROL=0 leaves it out). The PostgreSQL store's tables are
 * dropped and recreated: use a database of your own. Run it with `--cpu-prof` to see where the time goes.
 */
import { checkpointsCost, CPU_SOURCE } from '../scenarios/checkpoints.js'
import { checkpointsLines } from '../scenarios/checkpoints-report.js'

const stores = (process.env.CHECKPOINTS_STORES ?? 'sqlite,postgres').split(',') as Array<'sqlite' | 'postgres'>
const sizes = (process.env.CHECKPOINTS_RUNS ?? '1000,100000').split(',').map(Number)
const pgUrl = process.env.CHECKPOINTS_PG_URL
if (stores.includes('postgres') && !pgUrl) throw new Error('Set CHECKPOINTS_PG_URL to a PostgreSQL database of your own (its store tables are dropped).')

const results = []
for (const storedRuns of sizes) {
  results.push(...await checkpointsCost({
    stores, storedRuns, pgUrl,
    rounds: Number(process.env.CHECKPOINTS_ROUNDS ?? 20),
    batch: Number(process.env.CHECKPOINTS_BATCH ?? 100),
    warmup: 3,
    control: process.env.CHECKPOINTS_CONTROL !== '0',
  }))
}
console.log(`CPU: ${CPU_SOURCE}`)
for (const line of checkpointsLines(results).lines) console.log(line)
