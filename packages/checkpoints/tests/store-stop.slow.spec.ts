// A store's stop, and `stopped()`: cordis does not await a service's stop, so `ctx.stop()` resolves
// while the store still writes what it queued and closes its writer thread. `stopped()` resolves once
// all of that is done, from a stop at any point of the store's life (during its start too): then every
// record is in the file, no writer thread of it is left, and its directory can be removed at once.
// (A stop during a start makes cordis report that the start's end could not provide the service, its
// INACTIVE_EFFECT error, and minato's driver may report its own start cut short: theirs, not the store's.)
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import fc from 'fast-check'
import { Context } from 'cordis'
import { Database } from 'minato'
import SQLiteDriver from '@minatojs/driver-sqlite'
import { Checkpoints, type Config, TABLES } from '@cordis-subagents/checkpoints'
import { threadCount, within } from '@cordis-subagents/test-support'
import postgres from 'postgres'
import { withoutCallerTracing } from '@cordis-subagents/shared'
import { freshPostgres, PG_URL, rowsInFile, serviceOf, startStore, type StoreApp } from './support.js'

const START = { path: 'p', provider: 'spawn', state: 'running' } as const

/** The stores this spec made, in the order made (a stop may come before one is ready, with no `ctx.checkpoints` to reach it by). */
const made: Checkpoints[] = []
class TrackedCheckpoints extends Checkpoints {
  constructor(ctx: Context, config: Config) {
    super(ctx, config)
    made.push(this)
  }
}

function app(file: string): Context {
  const ctx = new Context()
  ctx.plugin(Database as never)
  ctx.plugin(SQLiteDriver, { path: file })
  ctx.plugin(TrackedCheckpoints, { host: 'stop-host' })
  return ctx
}


describe('checkpoints: a store stopped at any point, and stopped()', function () {
  this.timeout(120_000)

  before(async () => {
    // One start and stop first: the threads a first store starts for good (libuv's pool) are running before any count.
    // Each count is taken just before its store starts (other spec files share this worker process).
    const dir = mkdtempSync(join(tmpdir(), 'checkpoints-stop-'))
    const ctx = app(join(dir, 'warm.db'))
    await ctx.start()
    const store = await serviceOf(ctx, 'checkpoints')
    await ctx.stop()
    await store.stopped()
    rmSync(dir, { recursive: true })
  })

  it('property: records queued when ctx.stop() is called are all in the file once stopped() resolves; the directory then goes at once', async () => {
    await fc.assert(fc.asyncProperty(fc.integer({ min: 1, max: 300 }), fc.integer({ min: 0, max: 3 }), async (count, turns) => {
      const dir = mkdtempSync(join(tmpdir(), 'checkpoints-stop-'))
      const file = join(dir, 'runs.db')
      const before = threadCount()
      const ctx = app(file)
      await ctx.start()
      const store = await serviceOf(ctx, 'checkpoints')
      for (let i = 0; i < count; i++) void store.record({ id: `r${i}`, ...START }, { created: true, lazy: true })
      for (let i = 0; i < turns; i++) await new Promise((resolve) => setImmediate(resolve))
      await ctx.stop()
      await within(store.stopped(), 15_000, 'stopped()')
      expect(threadCount(), 'threads once stopped() resolved').to.be.at.most(before)
      expect(await rowsInFile(file)).to.equal(count)
      // No retries: nothing of the store writes in the directory any more.
      rmSync(dir, { recursive: true })
    }), { numRuns: 12, includeErrorInReport: true })
  })

  it('a stop that meets a hung database ends after STOP_WRITES_MS; a settle only in the run log is written by the next start', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'checkpoints-stop-'))
    const file = join(dir, 'hung.db')
    try {
      const ctx = app(file)
      await ctx.start()
      const store = await serviceOf(ctx, 'checkpoints')
      // STOP_WRITES_MS (5 s) lowered for this store: the stop must still wait that long before it ends the writer.
      const bound = 400
      withoutCallerTracing(store).stopWritesMs = bound
      await store.record({ id: 'r1', ...START }, { created: true })
      // A transaction on minato's connection holds the file (the writer thread's batch waits for it), until released.
      let release!: () => void
      const held = new Promise<void>((resolve) => { release = resolve })
      let began!: () => void
      const holding = new Promise<void>((resolve) => { began = resolve })
      // (Its end, on a stopped app, is minato's: not awaited.)
      void ctx.database.withTransaction(async (db) => {
        await db.get(TABLES.runs, { id: 'r1' })
        began()
        await held
      }).catch(() => {})
      await holding
      // Fulfils once in the run log; its batch then waits on the held file.
      await store.record({ id: 'r1', state: 'settled', result: 'done' }, { logged: true })
      await new Promise((resolve) => setTimeout(resolve, 50))
      const stopping = performance.now()
      await ctx.stop()
      await within(store.stopped(), 15_000, 'stopped() with a hung database')
      // (A timer may fire up to a millisecond before its bound as performance.now() counts it.)
      expect(performance.now() - stopping, 'the stop waited its bound, then ended the writer').to.be.at.least(bound - 2)
      release()
      const next = app(file)
      await next.start()
      const again = await serviceOf(next, 'checkpoints')
      expect(await again.load('r1'), 'the logged settle, written by the next start').to.include({ state: 'settled', result: 'done' })
      await next.stop()
      await again.stopped()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('PostgreSQL: a logged settle whose batch failed (the writer\'s session killed) is tried again and reaches the database', async () => {
    await freshPostgres()
    const dir = mkdtempSync(join(tmpdir(), 'checkpoints-stop-'))
    const runLog = join(dir, 'pg.runlog')
    const admin = postgres(PG_URL, { max: 2, onnotice: () => {} })
    let release = () => {}
    const apps: StoreApp[] = []
    try {
      const first = await startStore({ kind: 'postgres' }, { runLog })
      apps.push(first)
      await first.checkpoints.record({ id: 'kept', ...START }, { created: true })
      // Another session holds the run table: the settle's batch waits on it, and its session is then killed.
      const held = new Promise<void>((resolve) => { release = resolve })
      let locked!: () => void
      const holding = new Promise<void>((resolve) => { locked = resolve })
      const lock = admin.begin(async (tx) => {
        await tx.unsafe(`LOCK TABLE ${TABLES.runs} IN ACCESS EXCLUSIVE MODE`)
        locked()
        await held
      })
      await holding
      await first.checkpoints.record({ id: 'kept', state: 'settled', result: 'done' }, { logged: true })
      let waiting: Array<{ pid: number }> = []
      for (let tries = 0; !waiting.length && tries < 200; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 25))
        waiting = await admin`SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()`
      }
      expect(waiting, 'the writer\'s batch waiting on the lock').to.have.length(1)
      await admin`SELECT pg_terminate_backend(${waiting[0].pid})`
      release()
      await lock
      // Before, the failed settle was let go (and a later batch's mark in the run log covered it): the run stayed running.
      await first.checkpoints.record({ id: 'later', ...START }, { created: true, lazy: true })
      await first.checkpoints.drain()
      expect(await first.checkpoints.load('kept'), 'tried again').to.include({ state: 'settled', result: 'done' })
      expect(await first.checkpoints.load('later'), 'a later write').to.include({ state: 'running' })
      await first.stop()
      const second = await startStore({ kind: 'postgres' }, { runLog })
      apps.push(second)
      expect(await second.checkpoints.load('kept'), 'after a restart').to.include({ state: 'settled', result: 'done' })
    } finally {
      for (const started of apps) await started.stop()
      release()
      await admin.end({ timeout: 1 })
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('property: a stop at any point of the start (before it is ready, too) ends the writer thread and the run log; the next store of the file starts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'checkpoints-stop-'))
    let n = 0
    // What a stopped start reports, cordis prints with console.info once no logger is left: kept here, and none may be the store's.
    const info = console.info
    const reports: unknown[] = []
    console.info = (...args: unknown[]) => { reports.push(args[0]) }
    try {
      await fc.assert(fc.asyncProperty(fc.integer({ min: 0, max: 60 }), async (after) => {
        const file = join(dir, `start-${++n}.db`)
        const first = made.length
        const before = threadCount()
        const ctx = app(file)
        // A start takes some 50 ms here (the writer thread loads SQLite): the stop lands in it, or after it.
        const starting = ctx.start()
        await new Promise((resolve) => setTimeout(resolve, after))
        await ctx.stop()
        await starting
        // Stopped before the database was up, no store was made at all.
        const stores = made.slice(first)
        expect(stores.length, 'stores made').to.be.at.most(1)
        if (stores.length) await within(stores[0].stopped(), 15_000, `stopped() of a store stopped ${after} ms into its start`)
        expect(threadCount(), 'threads once stopped() resolved').to.be.at.most(before)
        // Its run log released: a second store of the file opens it and is ready.
        const next = app(file)
        await next.start()
        const store = await within(serviceOf(next, 'checkpoints'), 15_000, 'the next store ready')
        await store.record({ id: 'after', ...START }, { created: true })
        expect(await store.load('after')).to.include({ state: 'running' })
        await next.stop()
        await store.stopped()
      }), { numRuns: 15, includeErrorInReport: true })
      const ours = reports.filter((report) => /checkpoints\/src\//.test(String((report as Error)?.stack ?? report)))
      expect(ours.map(String), 'errors of the store\'s start once stopped').to.deep.equal([])
    } finally {
      console.info = info
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
