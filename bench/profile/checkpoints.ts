/**
 * The checkpoints row on its own (issue 42 item 1), not part of `npm run bench`:
 *
 *   CHECKPOINTS_PG_URL=postgres://… node --expose-gc --import tsx --conditions=cordis-subagents-source bench/profile/checkpoints.ts
 *
 * For each store (none, SQLite, PostgreSQL) and each number of stored runs (CHECKPOINTS_RUNS, default
 * "1000,10000"): statements per delegation (and which), main-thread CPU and wall time per delegation.
 * CHECKPOINTS_STORES=sqlite,postgres picks stores; CHECKPOINTS_N sets the delegations measured (300).
 * The PostgreSQL store's tables are dropped and recreated: use a database of your own.
 */
import { checkpointsCost, type CheckpointsResult, type StoreKind } from '../scenarios/checkpoints.js'

const stores = (process.env.CHECKPOINTS_STORES ?? 'none,sqlite,postgres').split(',') as StoreKind[]
const sizes = (process.env.CHECKPOINTS_RUNS ?? '1000,10000').split(',').map(Number)
const delegations = Number(process.env.CHECKPOINTS_N ?? 300)
const pgUrl = process.env.CHECKPOINTS_PG_URL
if (stores.includes('postgres') && !pgUrl) throw new Error('Set CHECKPOINTS_PG_URL to a PostgreSQL database of your own (its store tables are dropped).')

const results: CheckpointsResult[] = []
for (const store of stores) {
  for (const storedRuns of store === 'none' ? [0] : sizes) {
    const result = await checkpointsCost({ store, storedRuns, delegations, warmup: 100, pgUrl })
    results.push(result)
    console.log(`${store} @ ${storedRuns} stored runs: ${result.statements.toFixed(1)} statements, `
      + `${result.cpuMs.toFixed(3)} ms CPU, ${result.wallMs.toFixed(3)} ms wall per delegation`)
    for (const { shape, perDelegation } of result.shapes) console.log(`  ${perDelegation.toFixed(2)} × ${shape}`)
  }
}
const none = results.find((result) => result.store === 'none')
if (none) {
  console.log('\n| store | stored runs | statements | CPU / delegation | × no store | wall / delegation | added |')
  console.log('|---|---|---|---|---|---|---|')
  for (const r of results) {
    console.log(`| ${r.store} | ${r.storedRuns} | ${r.statements.toFixed(1)} | ${r.cpuMs.toFixed(3)} ms | ${(r.cpuMs / none.cpuMs).toFixed(2)}× `
      + `| ${r.wallMs.toFixed(3)} ms | ${(r.wallMs - none.wallMs).toFixed(3)} ms |`)
  }
}
