// Starting real cordis apps with minato and a real database (SQLite file or PostgreSQL server).
import { Context } from 'cordis'
import { Database } from 'minato'
import SQLiteDriver from '@minatojs/driver-sqlite'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import postgres from 'postgres'
import { Checkpoints, type Config, TABLES } from '@cordis-subagents/checkpoints'
import { PostgresDriver } from '@cordis-subagents/checkpoints/postgres'
import { stopApp } from '../../../test/support/stop-app.js'

/** The test run's own server (test/setup/test-postgres.ts starts it), unless CHECKPOINTS_PG_URL names yours. */
export const PG_URL = process.env.CHECKPOINTS_PG_URL ?? 'postgres://subagents:subagents@127.0.0.1:5432/subagents_test'

export type Backend = { kind: 'sqlite'; path: string } | { kind: 'postgres' }

export interface StoreApp {
  ctx: Context
  checkpoints: Checkpoints
  stop(): Promise<void>
}

/** Fails (never skips) with how to start PostgreSQL; then drops the store's tables for a clean start. */
export async function freshPostgres(): Promise<void> {
  const sql = postgres(PG_URL, { max: 1, connect_timeout: 5, onnotice: () => {} })
  try {
    await sql`SELECT 1`
    await sql.unsafe(`DROP TABLE IF EXISTS ${Object.values(TABLES).map((t) => `"${t}"`).join(', ')}`)
  } catch (error) {
    throw new Error(`PostgreSQL is not reachable at ${PG_URL.replace(/:[^:@/]*@/, ':***@')} (${(error as Error).message}). `
      + 'Run the specs through mocha (its test/setup/test-postgres.ts starts a PostgreSQL from npm when CHECKPOINTS_PG_URL is unset), '
      + 'or point CHECKPOINTS_PG_URL at a server you own with that role and database.', { cause: error })
  } finally {
    await sql.end({ timeout: 1 })
  }
}

/** Resolves with the service once the app provides it; rejects after `timeout` ms. */
export function serviceOf<K extends 'checkpoints' | 'database'>(ctx: Context, name: K, timeout = 15_000): Promise<Context[K]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      fork.dispose()
      reject(new Error(`ctx.${name} did not appear within ${timeout} ms`))
    }, timeout)
    const fork = ctx.inject([name], (inner) => {
      clearTimeout(timer)
      resolve(inner[name])
    })
  })
}

export async function startStore(backend: Backend, config: Config = {}): Promise<StoreApp> {
  const ctx = new Context()
  // minato's plugin types do not unify with cordis' overloads under NodeNext; the runtime shapes are the ones cordis expects.
  ctx.plugin(Database as never)
  if (backend.kind === 'sqlite') ctx.plugin(SQLiteDriver, { path: backend.path })
  else ctx.plugin(PostgresDriver as never, { url: PG_URL })
  ctx.plugin(Checkpoints, { host: 'test-host', ...config })
  await ctx.start()
  try {
    const checkpoints = await serviceOf(ctx, 'checkpoints')
    return { ctx, checkpoints, stop: () => stopApp(ctx) }
  } catch (error) {
    await stopApp(ctx)
    throw error
  }
}

/** Rows of the run table in the SQLite file, read by a connection of its own (nothing of the store's). */
export async function rowsInFile(file: string): Promise<number> {
  const module = createRequire(import.meta.url).resolve('@minatojs/sql.js')
  const init = (await import('@minatojs/sql.js')).default as (options: object) => Promise<{ Database: new (path: string) => {
    exec(sql: string): Array<{ values: unknown[][] }>
    close(): void
  } }>
  const SQL = await init({ locateFile: (name: string) => join(dirname(module), name) })
  const db = new SQL.Database(file)
  try {
    return Number(db.exec(`SELECT count(*) FROM ${TABLES.runs}`)[0].values[0][0])
  } finally {
    db.close()
  }
}
