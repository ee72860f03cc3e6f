import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Context } from 'cordis'
import { Database } from 'minato'
import SQLiteDriver from '@minatojs/driver-sqlite'
import postgres from 'postgres'
import { Checkpoints, TABLES } from '@cordis-subagents/checkpoints'
import { PostgresDriver } from '@cordis-subagents/checkpoints/postgres'
import { withoutCallerTracing } from '@cordis-subagents/shared'
import { delegationModel, host, type Host, now } from '../lib.js'

// The checkpoints row (issue 42 item 1): one sync spawn delegation with `ctx.checkpoints` loaded
// against the same delegation with no store, interleaved in one process, with N runs already stored.
// CPU is the main thread's own (its schedstat on Linux: what the delegation's thread spends, not
// the GC helper threads or libuv's pool); statements are what reaches the database: the store's
// direct writes (ops, and the batches they went in) and every statement minato's drivers run.

// A control, `idle`: the no-store delegation, then the main thread idles once (a 0 ms timer, about 1 ms
// asleep), as a delegation whose result waits for another thread does. On a machine whose idle CPU
// loses its caches, the waking alone costs main-thread CPU; this row shows how much.
type StoreKind = 'none' | 'idle' | 'sqlite' | 'postgres'

export interface StoreResult {
  store: StoreKind
  storedRuns: number
  /** Main-thread CPU per delegation (µs), one sample per round; the store's queued writes are written inside the round. */
  cpuUs: number[]
  /** Wall time of each delegation (µs): its result waits for its record. */
  wallUs: number[]
  /** Per round: this store's CPU ÷ the no-store CPU of the same round. */
  ratios: number[]
  /** Per delegation: direct writes, the batches they went in, and statements run through minato. */
  writes: number
  batches: number
  minatoStatements: number
}

export interface CheckpointsOptions {
  stores: Array<Exclude<StoreKind, 'none'>>
  storedRuns: number
  rounds: number
  batch: number
  warmup: number
  /** PostgreSQL url of a database of your own (its store tables are dropped first). */
  pgUrl?: string
  /** Measure the `idle` control too. */
  control?: boolean
}

const TASK = `/proc/self/task/${process.pid}/schedstat`
/** How the main thread's CPU is read: its schedstat on Linux, else the process' CPU (which also counts other threads). */
export const CPU_SOURCE = (() => {
  try {
    readFileSync(TASK)
    return 'main-thread'
  } catch {
    return 'process'
  }
})()

const PAUSE = new Int32Array(new SharedArrayBuffer(4))

/**
 * CPU time (µs) of this thread so far (or of the process, where no schedstat can be read). The kernel
 * brings a running thread's schedstat up to date only when it is switched out or at a scheduler tick
 * (up to 4 ms stale, a large part of a round); a 0.1 ms sleep first switches it out, so the figure is current.
 */
function cpuUs(): number {
  if (CPU_SOURCE === 'main-thread') {
    Atomics.wait(PAUSE, 0, 0, 0.1)
    return Number(readFileSync(TASK, 'latin1').split(' ')[0]) / 1000
  }
  const usage = process.cpuUsage()
  return usage.user + usage.system
}

let minatoStatements = 0
let countingMinato = false

/** Counts every statement minato's two drivers run (patched once, on the prototypes). */
function countMinato(): void {
  const sqlite = SQLiteDriver.prototype as unknown as { _exec(sql: string, ...rest: unknown[]): unknown; __counted?: true }
  if (sqlite.__counted) return
  sqlite.__counted = true
  const exec = sqlite._exec
  sqlite._exec = function (sql: string, ...rest: unknown[]) {
    if (countingMinato) minatoStatements++
    return exec.call(this, sql, ...rest)
  }
  const pg = PostgresDriver.prototype as unknown as { query(text: string, params?: unknown[]): Promise<unknown> }
  const query = pg.query
  pg.query = function (text: string, params?: unknown[]) {
    if (countingMinato) minatoStatements++
    return query.call(this, text, params)
  }
}

/** The store's direct writer, wrapped to count its ops and batches. */
function countWrites(ctx: Context): { ops: number; batches: number } {
  const tally = { ops: 0, batches: 0 }
  const store = withoutCallerTracing(ctx.checkpoints) as unknown as { writer?: { run(ops: unknown[]): Promise<number[]> } }
  const writer = store.writer
  // A store without a direct writer (an older one, another driver) writes everything through minato.
  if (!writer) return tally
  const run = writer.run.bind(writer)
  writer.run = (ops) => {
    tally.ops += ops.length
    tally.batches++
    return run(ops)
  }
  return tally
}

async function dropPostgres(url: string): Promise<void> {
  const sql = postgres(url, { max: 1, connect_timeout: 5, onnotice: () => {} })
  try {
    await sql.unsafe(`DROP TABLE IF EXISTS ${Object.values(TABLES).map((t) => `"${t}"`).join(', ')}`)
  } finally {
    await sql.end({ timeout: 1 })
  }
}

/** Stores `count` settled runs of earlier delegations, oldest first: SQLite 500 rows a minato transaction, PostgreSQL one statement. */
async function seed(ctx: Context, store: StoreKind, count: number, pgUrl?: string): Promise<void> {
  const at = Date.now() - count * 1000
  if (store === 'postgres') {
    const sql = postgres(pgUrl!, { max: 1, connect_timeout: 5, onnotice: () => {} })
    try {
      await sql.unsafe(`INSERT INTO "${TABLES.runs}" ("id", "path", "root", "parent", "provider", "agent", "state", "stopReason", "result", "usage",
        "work", "transcript", "turn", "background", "label", "delivery", "host", "instance", "createdAt", "updatedAt")
        SELECT 'seed-' || i, 'agent-seed/seed-' || i, 'agent-seed', '', 'spawn', 'agent-' || i, 'settled', 'completed', 'child answer', '{}',
          '{"steps":1}', NULL, 0, false, '', '', 'bench', 'seed', to_timestamp(($1::bigint + i) / 1000.0), to_timestamp(($1::bigint + i) / 1000.0)
        FROM generate_series(0, $2::int - 1) AS i`, [at, count])
    } finally {
      await sql.end({ timeout: 1 })
    }
    return
  }
  const database = (ctx as unknown as { database: Database }).database
  for (let from = 0; from < count; from += 500) {
    const rows: Array<Record<string, unknown>> = []
    for (let i = from; i < Math.min(count, from + 500); i++) {
      const date = new Date(at + i)
      rows.push({
        id: `seed-${i}`, path: `agent-seed/seed-${i}`, root: 'agent-seed', parent: '', provider: 'spawn', agent: `agent-${i}`,
        state: 'settled', stopReason: 'completed', result: 'child answer', usage: '{}', work: '{"steps":1}', host: 'bench',
        instance: 'seed', createdAt: date, updatedAt: date,
      })
    }
    await database.withTransaction(async (db) => { await db.upsert(TABLES.runs as never, rows as never) })
  }
}

export interface System {
  store: StoreKind
  host: Host
  dir?: string
  once(): Promise<void>
  flush(): Promise<void>
  tally?: { ops: number; batches: number }
  cpu: number[]
  wall: number[]
  writes: number
  batches: number
  minato: number
}

/** One system of the row: a host with `store` loaded (seeded with `options.storedRuns` runs), or none. */
export async function system(store: StoreKind, options: CheckpointsOptions): Promise<System> {
  const dir = store === 'sqlite' || store === 'postgres' ? mkdtempSync(join(tmpdir(), 'bench-checkpoints-')) : undefined
  if (store === 'postgres') await dropPostgres(options.pgUrl!)
  const h = await host({
    model: delegationModel('subagent'),
    plugins: store === 'none' || store === 'idle' ? undefined : (ctx) => {
      ctx.plugin(Database as never)
      if (store === 'sqlite') ctx.plugin(SQLiteDriver, { path: join(dir!, 'store.db') })
      else ctx.plugin(PostgresDriver as never, { url: options.pgUrl })
      // Room for the stored runs and the measured ones: nothing is trimmed while measuring.
      // The run log: beside the SQLite file by default; PostgreSQL hosts name theirs (CHECKPOINTS_RUN_LOG=off: none, to compare).
      const runLog = process.env.CHECKPOINTS_RUN_LOG === 'off' ? 'off' : store === 'postgres' ? join(dir!, 'postgres.runlog') : ''
      ctx.plugin(Checkpoints, { host: 'bench', maxRuns: Math.max(10_000, 2 * options.storedRuns), runLog })
    },
  })
  let tally: System['tally']
  if (store !== 'none' && store !== 'idle') {
    await new Promise<void>((resolve) => h.ctx.inject(['checkpoints'], () => resolve()))
    await seed(h.ctx, store, options.storedRuns, options.pgUrl)
    // The kept count is taken again now the seeded runs are in (a sweep counts the table).
    await h.ctx.checkpoints.sweep()
    tally = countWrites(h.ctx)
  }
  const agents = withoutCallerTracing(h.ctx.agents)
  const journal = () => (h.ctx.subagents as unknown as { journal?: { flush?(): Promise<void> } }).journal
  return {
    store, host: h, dir, tally, cpu: [], wall: [], writes: 0, batches: 0, minato: 0,
    async once() {
      const agent = agents.create({})
      const result = await agent.run('do the task')
      if (result.text !== 'parent final answer') throw new Error(`wrong answer: ${result.text}`)
      if (store === 'idle') await new Promise((resolve) => setTimeout(resolve, 0))
      await agent.dispose()
    },
    async flush() {
      await journal()?.flush?.()
    },
  }
}

/** One round of `batch` delegations on `s`: each delegation's wall time, and the round's main-thread CPU per delegation. */
async function round(s: System, batch: number, record: boolean): Promise<void> {
  const ops = s.tally ? { ...s.tally } : undefined
  const statements = minatoStatements
  countingMinato = record
  const cpu0 = cpuUs()
  for (let i = 0; i < batch; i++) {
    const t0 = now()
    await s.once()
    if (record) s.wall.push((now() - t0) * 1000)
  }
  await s.flush()
  const cpu = cpuUs() - cpu0
  countingMinato = false
  if (!record) return
  s.cpu.push(cpu / batch)
  if (ops && s.tally) {
    s.writes += s.tally.ops - ops.ops
    s.batches += s.tally.batches - ops.batches
  }
  s.minato += minatoStatements - statements
}

/** The no-store delegation and each store's, interleaved round by round in this process, with `storedRuns` stored. */
export async function checkpointsCost(options: CheckpointsOptions): Promise<StoreResult[]> {
  countMinato()
  const systems: System[] = [await system('none', options)]
  try {
    if (options.control) systems.push(await system('idle', options))
    for (const store of options.stores) systems.push(await system(store, options))
    for (let i = 0; i < options.warmup; i++) for (const s of systems) await round(s, options.batch, false)
    for (let r = 0; r < options.rounds; r++) {
      // Rotate who goes first, so no store always runs right after the same neighbour.
      for (let k = 0; k < systems.length; k++) await round(systems[(r + k) % systems.length], options.batch, true)
    }
    const none = systems[0]
    return systems.map((s) => {
      const n = s.wall.length
      return {
        store: s.store,
        storedRuns: s.store === 'none' || s.store === 'idle' ? 0 : options.storedRuns,
        cpuUs: s.cpu,
        wallUs: s.wall,
        // A round whose no-store CPU read 0 (a reading the kernel had not brought up to date) pairs with nothing.
        ratios: s.cpu.flatMap((cpu, index) => none.cpu[index] > 0 ? [cpu / none.cpu[index]] : []),
        writes: s.writes / n,
        batches: s.batches / n,
        minatoStatements: s.minato / n,
      }
    })
  } finally {
    countingMinato = false
    for (const s of systems) {
      await s.host.stop()
      if (s.dir) rmSync(s.dir, { recursive: true, force: true })
    }
  }
}
