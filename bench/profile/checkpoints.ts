/**
 * The checkpoints row on its own (issue 42 item 1; `npm run bench` runs it as section 11):
 *
 *   CHECKPOINTS_PG_URL=postgres://… node --expose-gc --import tsx --conditions=cordis-subagents-source bench/profile/checkpoints.ts
 *
 * For each number of stored runs (CHECKPOINTS_RUNS, default "1000,100000"): each store's delegation
 * (CHECKPOINTS_STORES, default "sqlite,postgres"; "" for none) paired with the no-store delegation,
 * CHECKPOINTS_ROUNDS pairs each (default 20) of CHECKPOINTS_BATCH delegations a batch (default 1000), the
 * A/A row (a second no-store host; CHECKPOINTS_TWIN=0 leaves it out) and the idle control row (no store,
 * the main thread idling once per delegation; CHECKPOINTS_CONTROL=0 leaves it out), both at the first size only. The PostgreSQL store's
 * tables are dropped and recreated: use a database of your own. CHECKPOINTS_SLICE (default 25) is how many
 * delegations a side runs before the other side's turn within a pair. Run it with `--cpu-prof` to see where the time goes.
 */
import { checkpointsCost, CPU_SOURCE } from '../scenarios/checkpoints.js'
import { checkpointsLines } from '../scenarios/checkpoints-report.js'

const stores = (process.env.CHECKPOINTS_STORES ?? 'sqlite,postgres').split(',').filter(Boolean) as Array<'sqlite' | 'postgres'>
const sizes = (process.env.CHECKPOINTS_RUNS ?? '1000,100000').split(',').map(Number)
const pgUrl = process.env.CHECKPOINTS_PG_URL
if (stores.includes('postgres') && !pgUrl) throw new Error('Set CHECKPOINTS_PG_URL to a PostgreSQL database of your own (its store tables are dropped).')

const results = []
for (const [index, storedRuns] of sizes.entries()) {
  results.push(...await checkpointsCost({
    stores, storedRuns, pgUrl,
    rounds: Number(process.env.CHECKPOINTS_ROUNDS ?? 20),
    batch: Number(process.env.CHECKPOINTS_BATCH ?? 1000),
    warmup: 2,
    // As the section: the control and the A/A row at the first size only.
    control: index === 0 && process.env.CHECKPOINTS_CONTROL !== '0',
    twin: index === 0 && process.env.CHECKPOINTS_TWIN !== '0',
  }))
}
console.log(`CPU: ${CPU_SOURCE}`)
for (const line of checkpointsLines(results).lines) console.log(line)
