import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Context } from 'cordis'
import { Database, type Tables } from 'minato'
import SQLiteDriver from '@minatojs/driver-sqlite'
import postgres from 'postgres'
import { Checkpoints, TABLES } from '@cordis-subagents/checkpoints'
import { PostgresDriver } from '@cordis-subagents/checkpoints/postgres'
import { withoutCallerTracing } from '@cordis-subagents/shared'
import { delegationModel, host, now } from '../lib.js'

// The checkpoints row (issue 42 item 1): what one sync spawn delegation costs with `ctx.checkpoints`
// loaded, against the same delegation with no store, with N settled runs already stored. Every SQL
// statement the store's driver runs is counted (SQLite: the driver's `_exec`; PostgreSQL: our
// driver's `query`), so "statements per delegation" is what reaches the database, not minato calls.

export type StoreKind = 'none' | 'sqlite' | 'postgres'

export interface CheckpointsResult {
  store: StoreKind
  storedRuns: number
  delegations: number
  /** Mean wall time of one delegation, the parent's turn included (ms): its result waits for its record. */
  wallMs: number
  /** Main-thread CPU of one delegation (ms), the store's queued writes flushed. */
  cpuMs: number
  statements: number
  /** Each statement shape (literals masked) and how many times one delegation runs it. */
  shapes: Array<{ shape: string; perDelegation: number }>
}

const counted: string[] = []
let counting = false

/** Counts every statement both drivers run, from the first call on (patched once, on the prototypes). */
function countStatements(): void {
  const sqlite = SQLiteDriver.prototype as unknown as { _exec(sql: string, ...rest: unknown[]): unknown; __counted?: true }
  if (sqlite.__counted) return
  sqlite.__counted = true
  const exec = sqlite._exec
  sqlite._exec = function (sql: string, ...rest: unknown[]) {
    if (counting) counted.push(sql)
    return exec.call(this, sql, ...rest)
  }
  const pg = PostgresDriver.prototype as unknown as { query(text: string, params?: unknown[]): Promise<unknown> }
  const query = pg.query
  pg.query = function (text: string, params?: unknown[]) {
    if (counting) counted.push(text)
    return query.call(this, text, params)
  }
}

function shapeOf(sql: string): string {
  // minato names each selection with a random 8-letter alias.
  return sql.replace(/(["`]) [a-z]{8}\b/g, '$1 t').replace(/\b[a-z]{8}\./g, 't.').replace(/'(?:[^']|'')*'/g, '?').replace(/\$\d+/g, '?').replace(/\b\d+\b/g, 'N').replace(/\s+/g, ' ').slice(0, 140)
}

/** Drops the store's tables on the PostgreSQL `url` names (a database of your own: CHECKPOINTS_PG_URL). */
async function dropPostgres(url: string): Promise<void> {
  const sql = postgres(url, { max: 1, connect_timeout: 5, onnotice: () => {} })
  try {
    await sql.unsafe(`DROP TABLE IF EXISTS ${Object.values(TABLES).map((t) => `"${t}"`).join(', ')}`)
  } finally {
    await sql.end({ timeout: 1 })
  }
}

/** Stores `count` settled runs of earlier delegations, oldest first, in chunks. */
async function seed(ctx: Context, count: number): Promise<void> {
  const database = (ctx as unknown as { database: Database<Tables> }).database
  const at = Date.now() - count * 1000
  for (let from = 0; from < count; from += 500) {
    const rows = []
    for (let i = from; i < Math.min(count, from + 500); i++) {
      const date = new Date(at + i * 1000)
      rows.push({
        id: `seed-${i}`, path: `agent-seed/seed-${i}`, root: 'agent-seed', parent: '', provider: 'spawn', agent: `agent-${i}`,
        state: 'settled', stopReason: 'completed', result: 'child answer', usage: '{}', work: '{"steps":1}', host: 'bench',
        instance: 'seed', createdAt: date, updatedAt: date,
      })
    }
    await database.upsert(TABLES.runs as never, rows as never)
  }
}

export interface CheckpointsOptions {
  store: StoreKind
  storedRuns: number
  delegations: number
  warmup: number
  /** PostgreSQL url (its store tables are dropped first). */
  pgUrl?: string
}

export async function checkpointsCost(options: CheckpointsOptions): Promise<CheckpointsResult> {
  countStatements()
  const dir = mkdtempSync(join(tmpdir(), 'bench-checkpoints-'))
  if (options.store === 'postgres') await dropPostgres(options.pgUrl!)
  const h = await host({
    model: delegationModel('subagent'),
    plugins: options.store === 'none' ? undefined : (ctx) => {
      ctx.plugin(Database as never)
      if (options.store === 'sqlite') ctx.plugin(SQLiteDriver, { path: join(dir, 'store.db') })
      else ctx.plugin(PostgresDriver as never, { url: options.pgUrl })
      // No count trim while measuring: the stored runs stay as seeded.
      ctx.plugin(Checkpoints, { host: 'bench', maxRuns: 10_000_000 })
    },
  })
  try {
    if (options.store !== 'none') {
      await new Promise<void>((resolve) => h.ctx.inject(['checkpoints'], () => resolve()))
      await seed(h.ctx, options.storedRuns)
    }
    const agents = withoutCallerTracing(h.ctx.agents)
    const once = async () => {
      const agent = agents.create({})
      const result = await agent.run('do the task')
      if (result.text !== 'parent final answer') throw new Error(`wrong answer: ${result.text}`)
      await agent.dispose()
    }
    for (let i = 0; i < options.warmup; i++) await once()
    const flush = () => (h.ctx.subagents as unknown as { journal?: { flush?(): Promise<void> } }).journal?.flush?.()
    await flush()
    counted.length = 0
    counting = true
    const cpu0 = process.cpuUsage()
    const t0 = now()
    for (let i = 0; i < options.delegations; i++) await once()
    const wall = now() - t0
    await flush()
    const cpu = process.cpuUsage(cpu0)
    counting = false
    const n = options.delegations
    const shapes = new Map<string, number>()
    for (const sql of counted) shapes.set(shapeOf(sql), (shapes.get(shapeOf(sql)) ?? 0) + 1)
    return {
      store: options.store,
      storedRuns: options.store === 'none' ? 0 : options.storedRuns,
      delegations: n,
      wallMs: wall / n,
      cpuMs: (cpu.user + cpu.system) / 1000 / n,
      statements: counted.length / n,
      shapes: [...shapes].map(([shape, times]) => ({ shape, perDelegation: times / n })),
    }
  } finally {
    counting = false
    await h.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}
