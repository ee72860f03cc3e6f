// A parallel mocha worker's own database. The spec files share one PostgreSQL server, and several reset
// the same tables (checkpoints' specs drop and recreate theirs; the durable specs use those tables too),
// so two files running at once in two workers must not share a database. A worker (MOCHA_WORKER_ID set)
// creates `<database>_w<id>` on the run's server, afresh, and points every PostgreSQL variable that named
// the run's database at it. A server of your own (CHECKPOINTS_PG_URL) then needs a role with CREATEDB.
import postgres from 'postgres'

const VARIABLES = ['CHECKPOINTS_PG_URL', 'SERVE_A2A_PG_URL', 'SCALE_OUT_PG_URL'] as const

export async function useWorkerDatabase(worker: string): Promise<void> {
  const shared = process.env.CHECKPOINTS_PG_URL
  if (!shared || !/^\d+$/.test(worker)) return
  const url = new URL(shared)
  const name = `${decodeURIComponent(url.pathname.slice(1))}_w${worker}`
  const sql = postgres(shared, { max: 1, connect_timeout: 10, onnotice: () => {} })
  try {
    await sql.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)
    await sql.unsafe(`CREATE DATABASE "${name}"`)
  } catch (error) {
    throw new Error(`parallel worker ${worker} could not create its database "${name}" (the role needs CREATEDB): ${(error as Error).message}`,
      { cause: error })
  } finally {
    await sql.end({ timeout: 5 })
  }
  url.pathname = `/${encodeURIComponent(name)}`
  for (const variable of VARIABLES) if (process.env[variable] === shared) process.env[variable] = url.href
}
