// PostgreSQL for the shared-state specs: the test run's own (test/setup/test-postgres.ts; the checkpoints specs' one),
// a schema of our own per run, dropped after.
import { randomBytes } from 'node:crypto'
import postgres from 'postgres'

export const PG_URL = process.env.SERVE_A2A_PG_URL ?? process.env.CHECKPOINTS_PG_URL ?? 'postgres://subagents:subagents@127.0.0.1:5432/subagents_test'

/** A fresh schema name for this run (lower-case identifier, as the config requires). */
export function freshSchema(): string {
  return `serve_a2a_t${randomBytes(4).toString('hex')}`
}

/** Runs `fn` on a one-connection client; fails (never skips) with how to start PostgreSQL when it is not reachable. */
export async function withPg<T>(fn: (sql: postgres.Sql) => Promise<T>): Promise<T> {
  const sql = postgres(PG_URL, { max: 1, connect_timeout: 5, onnotice: () => {} })
  try {
    try {
      await sql`SELECT 1`
    } catch (error) {
      throw new Error(`PostgreSQL is not reachable at ${PG_URL.replace(/:[^:@/]*@/, ':***@')} (${(error as Error).message}). `
        + 'Run the specs through mocha (its test/setup/test-postgres.ts starts a PostgreSQL from npm when CHECKPOINTS_PG_URL is unset), '
        + 'or point SERVE_A2A_PG_URL at a server you own.', { cause: error })
    }
    return await fn(sql)
  } finally {
    await sql.end({ timeout: 1 })
  }
}

export function dropSchema(schema: string): Promise<void> {
  return withPg(async (sql) => { await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`) })
}
