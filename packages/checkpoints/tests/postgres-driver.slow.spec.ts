// The minato PostgreSQL driver on its own, against a real server: escaping, operators, upsert,
// counts, duplicate keys, and a column added to an existing table at the next start.
import { expect } from 'chai'
import { Context } from 'cordis'
import { $, Database, RuntimeError } from 'minato'
import postgres from 'postgres'
import { PostgresDriver } from '@cordis-subagents/checkpoints/postgres'
import { freshPostgres, PG_URL, serviceOf } from './support.js'

const TABLE = 'driver_probe'

interface Probe {
  id: string
  n: number
  flag: boolean
  at: Date
  body: string
  extra?: string
}

declare module 'minato' {
  interface Tables {
    driver_probe: Probe
  }
}

async function dropProbe() {
  const sql = postgres(PG_URL, { max: 1, onnotice: () => {} })
  try {
    await sql.unsafe(`DROP TABLE IF EXISTS "${TABLE}"`)
  } finally {
    await sql.end({ timeout: 1 })
  }
}

async function startDriver(withExtra = false, initial = 'none'): Promise<Context> {
  const ctx = new Context()
  ctx.plugin(Database as never)
  ctx.plugin(PostgresDriver as never, { url: PG_URL })
  await ctx.start()
  await serviceOf(ctx, 'database')
  ctx.model.extend(TABLE, {
    id: 'string', n: 'unsigned', flag: 'boolean', at: 'timestamp', body: 'text',
    ...withExtra ? { extra: { type: 'string', initial } } : {},
  } as never, { primary: 'id' })
  return ctx
}

const HOSTILE = [`it's`, `back\\slash`, `"; DROP TABLE ${TABLE}; --`, '$1 $$ ?', 'ünïcødé ☃', '\n\t']

describe('minato PostgreSQL driver (@cordis-subagents/checkpoints/postgres)', function () {
  let ctx: Context | undefined

  beforeEach(async () => {
    await freshPostgres()
    await dropProbe()
  })

  afterEach(async () => {
    await ctx?.stop()
    ctx = undefined
    await dropProbe()
  })

  it('stores and finds hostile strings verbatim (quotes, backslashes, comments, placeholders)', async () => {
    ctx = await startDriver()
    for (const [i, body] of HOSTILE.entries()) {
      await ctx.database.create(TABLE, { id: body, n: i, flag: i % 2 === 0, at: new Date(1000 * i), body })
    }
    for (const body of HOSTILE) {
      const rows = await ctx.database.get(TABLE, { id: body, body })
      expect(rows.map((row) => row.body)).to.deep.equal([body])
    }
    expect(await ctx.database.eval(TABLE, (row) => $.count(row.id))).to.equal(HOSTILE.length)
  })

  it('queries with comparison, membership, regex, sort, limit and offset; counts through eval', async () => {
    ctx = await startDriver()
    for (let i = 0; i < 6; i++) await ctx.database.create(TABLE, { id: `r${i}`, n: i, flag: i < 3, at: new Date(1000 * i), body: i % 2 ? 'odd' : 'even' })
    expect((await ctx.database.get(TABLE, { n: { $gte: 2, $lt: 5 } })).map((r) => r.id).sort()).to.deep.equal(['r2', 'r3', 'r4'])
    expect(await ctx.database.get(TABLE, { id: [] })).to.deep.equal([])
    expect((await ctx.database.get(TABLE, { id: { $in: ['r1', 'r5'] } })).map((r) => r.n).sort()).to.deep.equal([1, 5])
    expect((await ctx.database.get(TABLE, { body: /^od/ })).length).to.equal(3)
    expect((await ctx.database.get(TABLE, { at: { $lt: new Date(2500) } })).length).to.equal(3)
    const page = await ctx.database.get(TABLE, {}, { sort: { n: 'desc' }, limit: 2, offset: 1 })
    expect(page.map((r) => r.id)).to.deep.equal(['r4', 'r3'])
    expect(page[0].at).to.be.instanceOf(Date)
    expect(page[0].flag).to.equal(false)
    expect(await ctx.database.eval(TABLE, (row) => $.count(row.id), { flag: true })).to.equal(3)
    expect(await ctx.database.eval(TABLE, (row) => $.max(row.n))).to.equal(5)
  })

  it('updates with expressions, upserts (inserted vs matched), removes, and maps a duplicate key to duplicate-entry', async () => {
    ctx = await startDriver()
    await ctx.database.create(TABLE, { id: 'a', n: 1, flag: true, at: new Date(0), body: 'x' })
    expect(await ctx.database.set(TABLE, { id: 'a' }, (row) => ({ n: $.add(row.n, 41) }))).to.include({ matched: 1 })
    expect((await ctx.database.get(TABLE, { id: 'a' }))[0].n).to.equal(42)
    const result = await ctx.database.upsert(TABLE, [{ id: 'a', body: 'y' }, { id: 'b', n: 7 }])
    expect(result).to.include({ inserted: 1, matched: 1 })
    expect((await ctx.database.get(TABLE, { id: 'a' }))[0]).to.include({ n: 42, body: 'y' })
    let duplicate: unknown
    try {
      await ctx.database.create(TABLE, { id: 'a', n: 0, flag: false, at: new Date(0), body: '' })
    } catch (error) {
      duplicate = error
    }
    expect(duplicate).to.be.instanceOf(RuntimeError)
    expect((duplicate as RuntimeError<'duplicate-entry'>).code).to.equal('duplicate-entry')
    expect(await ctx.database.remove(TABLE, { id: ['a', 'b', 'c'] })).to.include({ removed: 2 })
  })

  it('adds a column the model gained since the table was created, keeping the rows', async () => {
    ctx = await startDriver()
    await ctx.database.create(TABLE, { id: 'kept', n: 1, flag: true, at: new Date(0), body: 'old' })
    await ctx.stop()
    ctx = await startDriver(true)
    const [row] = await ctx.database.get(TABLE, { id: 'kept' })
    expect(row).to.include({ body: 'old', extra: 'none' })
  })
  it('binds only the values a statement names (minato drops a condition that cannot match) and quotes DDL defaults exactly', async () => {
    ctx = await startDriver(true, `it's \\ a "default"`)
    await ctx.database.create(TABLE, { id: 'a', n: 1, flag: true, at: new Date(0), body: 'x' })
    await ctx.database.create(TABLE, { id: 'b', n: 2, flag: true, at: new Date(0), body: 'y' })
    const either = await ctx.database.get(TABLE, { $or: [{ id: 'a', n: [] }, { body: 'y' }] } as never)
    expect(either.map((row) => row.id)).to.deep.equal(['b'])
    expect(await ctx.database.set(TABLE, { $or: [{ id: 'b', n: [] }, { id: 'a' }] } as never, { body: 'z' })).to.include({ matched: 1 })
    const [row] = await ctx.database.get(TABLE, { id: 'a' })
    expect(row).to.include({ body: 'z', extra: `it's \\ a "default"` })
  })

  it('refuses to start on a url that turns standard_conforming_strings off (CHECKPOINTS_INVALID_CONFIG)', async () => {
    ctx = new Context()
    ctx.plugin(Database as never)
    const errors: unknown[] = []
    const fork = ctx.plugin(PostgresDriver as never, { url: `${PG_URL}?standard_conforming_strings=off` })
    fork.ctx.on('internal/error', (error: unknown) => errors.push(error))
    await ctx.start()
    await ctx.lifecycle.flush()
    expect(errors.map((error) => (error as { code?: string }).code)).to.deep.equal(['CHECKPOINTS_INVALID_CONFIG'])
    expect(String(errors[0])).to.match(/standard_conforming_strings to off.*remove that parameter/)
    expect(ctx.get('database'), 'no database on a refused driver').to.equal(undefined)
  })
})
