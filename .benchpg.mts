import { spawnSync } from 'node:child_process'
import { startEmbeddedPostgres } from './test/setup/embedded-postgres.ts'
const pg = await startEmbeddedPostgres()
try {
  const r = spawnSync('npm', ['run', 'bench'], { stdio: 'inherit', env: { ...process.env, CHECKPOINTS_PG_URL: pg.superuserUrl('postgres') } })
  console.log('bench exit', r.status)
} finally {
  await pg.stop()
}
