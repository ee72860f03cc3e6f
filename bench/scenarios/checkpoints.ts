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
// The A/A row, `twin`: a second, identical host with no store, paired with the first as every store is:
// the spread of its ratios is what the measurement can resolve on this machine (1.0 when it is exact).
type StoreKind = 'none' | 'twin' | 'idle' | 'sqlite' | 'postgres'

export interface StoreResult {
  store: StoreKind
  storedRuns: number
  /** Main-thread CPU per delegation (µs), one sample per round; the store's queued writes are written inside the round. */
  cpuUs: number[]
  /** Wall time of each delegation (µs): its result waits for its record. */
  wallUs: number[]
  /** Per pair: this system's batch CPU ÷ the no-store batch CPU run right before or after it. */
  ratios: number[]
  /** Per delegation: direct writes, the batches they went in, and statements run through minato. */
  writes: number
  batches: number
  minatoStatements: number
}

export interface CheckpointsOptions {
  stores: Array<Exclude<StoreKind, 'none' | 'twin' | 'idle'>>
  storedRuns: number
  /** Pairs per system: each a batch of this system and one of no store, one right after the other, the order alternating. */
  rounds: number
  /** Delegations per batch: long enough that the collections spread over both batches of a pair (the A/A row shows it). */
  batch: number
  warmup: number
  /** PostgreSQL url of a database of your own (its store tables are dropped first). */
  pgUrl?: string
  /** Measure the `idle` control too. */
  control?: boolean
  /** Measure the A/A row (`twin`) too. */
  twin?: boolean
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
  /** The no-store batch of each pair, CPU per delegation (the system's own samples are `cpu`). */
  paired: number[]
  /** Delegations since the store's writes were last flushed. */
  sinceFlush: number
  writes: number
  batches: number
  minato: number
}

/** Whether a no-store side turns the event loop at its flush point too (CHECKPOINTS_TURN=store: only a store's side). */
const TURN_EVERY_SIDE = process.env.CHECKPOINTS_TURN !== 'store'

const hasStore = (store: StoreKind) => store === 'sqlite' || store === 'postgres'

/** One system of the row: a host with `store` loaded (seeded with `options.storedRuns` runs), or none. */
export async function system(store: StoreKind, options: CheckpointsOptions): Promise<System> {
  const dir = store === 'sqlite' || store === 'postgres' ? mkdtempSync(join(tmpdir(), 'bench-checkpoints-')) : undefined
  if (store === 'postgres') await dropPostgres(options.pgUrl!)
  const h = await host({
    model: delegationModel('subagent'),
    plugins: !hasStore(store) ? undefined : (ctx) => {
      ctx.plugin(Database as never)
      if (store === 'sqlite') ctx.plugin(SQLiteDriver, { path: join(dir!, 'store.db') })
      else ctx.plugin(PostgresDriver as never, { url: options.pgUrl })
      // Room for the stored runs and the measured ones: nothing is trimmed while measuring.
      // The run log: beside the SQLite file by default; PostgreSQL hosts name theirs (CHECKPOINTS_RUN_LOG=off: none, to compare).
      const runLog = process.env.CHECKPOINTS_RUN_LOG === 'off' ? 'off' : store === 'postgres' ? join(dir!, 'postgres.runlog') : ''
      // Every measured delegation (warm-up pairs too) adds a run: room for all of them, or the retention trim would be measured.
      const measured = (options.warmup + options.rounds) * options.batch
      ctx.plugin(Checkpoints, { host: 'bench', maxRuns: Math.max(10_000, 2 * (options.storedRuns + measured)), runLog })
    },
  })
  let tally: System['tally']
  if (hasStore(store)) {
    await new Promise<void>((resolve) => h.ctx.inject(['checkpoints'], () => resolve()))
    await seed(h.ctx, store, options.storedRuns, options.pgUrl)
    // The kept count is taken again now the seeded runs are in (a sweep counts the table).
    await h.ctx.checkpoints.sweep()
    tally = countWrites(h.ctx)
  }
  const agents = withoutCallerTracing(h.ctx.agents)
  const journal = () => (h.ctx.subagents as unknown as { journal?: { flush?(): Promise<void> } }).journal
  return {
    store, host: h, dir, tally, cpu: [], wall: [], paired: [], sinceFlush: 0, writes: 0, batches: 0, minato: 0,
    async once() {
      const agent = agents.create({})
      const result = await agent.run('do the task')
      if (result.text !== 'parent final answer') throw new Error(`wrong answer: ${result.text}`)
      if (store === 'idle') await new Promise((resolve) => setTimeout(resolve, 0))
      await agent.dispose()
    },
    async flush() {
      await journal()?.flush?.()
      // Every system turns the event loop here, no store's side as a store's (whose wait for its writer
      // is a turn), as a host does between its model calls: a turn runs what V8 deferred to it (its
      // foreground tasks) from both sides' slices, and only a side that turns pays for it.
      // CHECKPOINTS_TURN=store: only a store's side turns, as this section did before, to compare.
      if (TURN_EVERY_SIDE) await new Promise((resolve) => setImmediate(resolve))
    },
  }
}

/** Delegations per slice: a pair's two batches are run in slices of this many, the two systems' slices alternating. */
const SLICE = Number(process.env.CHECKPOINTS_SLICE ?? 25)
/** A store's queued writes are flushed (written, and waited for) every this many delegations of it, as before slices. */
const FLUSH = 100

/**
 * One slice of `batch` delegations on `s`: its main-thread CPU per delegation (each delegation's wall time
 * kept when `record`). The store's queued writes are flushed inside a slice every FLUSH delegations of the
 * system, and in the `last` slice of a pair (nothing carries over into the next pair).
 */
async function batchOf(s: System, batch: number, record: boolean, last: boolean): Promise<number> {
  const ops = s.tally ? { ...s.tally } : undefined
  const statements = minatoStatements
  countingMinato = record
  const cpu0 = cpuUs()
  for (let i = 0; i < batch; i++) {
    const t0 = now()
    await s.once()
    if (record) s.wall.push((now() - t0) * 1000)
  }
  s.sinceFlush += batch
  if (last || s.sinceFlush >= FLUSH) {
    await s.flush()
    s.sinceFlush = 0
  }
  const cpu = cpuUs() - cpu0
  countingMinato = false
  if (record) {
    if (ops && s.tally) {
      s.writes += s.tally.ops - ops.ops
      s.batches += s.tally.batches - ops.batches
    }
    s.minato += minatoStatements - statements
  }
  return cpu / batch
}

/**
 * One pair: `batch` delegations of `s` and `batch` of no store (`none`), in slices of SLICE taken in
 * turn (A B B A A B …: the first slice's system alternates from pair to pair, and each next two slices
 * swap), so both sides of a pair run under the same conditions at a fine grain, and the collections of
 * a whole batch spread over both. Each side's CPU per delegation is kept side by side (`s.cpu`, `s.paired`).
 */
async function pair(none: System, s: System, batch: number, index: number, record: boolean): Promise<void> {
  const slice = Math.min(SLICE, batch)
  let base = 0
  let own = 0
  for (let done = 0, k = 0; done < batch; done += slice, k++) {
    const size = Math.min(slice, batch - done)
    const last = done + size >= batch
    // Per slice pair: no store first when index + k is even (ABBA over the slices).
    if ((index + k) % 2 === 0) {
      base += await batchOf(none, size, record, last) * size
      own += await batchOf(s, size, record, last) * size
    } else {
      own += await batchOf(s, size, record, last) * size
      base += await batchOf(none, size, record, last) * size
    }
  }
  if (!record) return
  s.cpu.push(own / batch)
  s.paired.push(base / batch)
  none.cpu.push(base / batch)
}

/** Every system paired with the no-store host, `rounds` pairs each, interleaved in this process, with `storedRuns` stored. */
export async function checkpointsCost(options: CheckpointsOptions): Promise<StoreResult[]> {
  countMinato()
  const systems: System[] = [await system('none', options)]
  try {
    if (options.twin) systems.push(await system('twin', options))
    if (options.control) systems.push(await system('idle', options))
    for (const store of options.stores) systems.push(await system(store, options))
    const [none, ...others] = systems
    for (let i = 0; i < options.warmup; i++) for (const s of others) await pair(none, s, options.batch, i, false)
    for (let r = 0; r < options.rounds; r++) {
      // Rotate which system's pair comes first, so no system always follows the same neighbour.
      for (let k = 0; k < others.length; k++) {
        const index = (r + k) % others.length
        await pair(none, others[index], options.batch, r + index, true)
      }
    }
    return systems.map((s) => {
      const n = s.wall.length
      return {
        store: s.store,
        storedRuns: hasStore(s.store) ? options.storedRuns : 0,
        cpuUs: s.cpu,
        wallUs: s.wall,
        // A pair whose no-store CPU read 0 (a reading the kernel had not brought up to date) is left out.
        ratios: s.paired.flatMap((base, index) => base > 0 ? [s.cpu[index] / base] : []),
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
