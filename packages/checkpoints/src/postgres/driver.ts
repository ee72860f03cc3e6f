import { Dict, isNullable, makeArray } from 'cosmokit'
import { Driver, Eval, executeUpdate, Field, isEvalExpr, Model, RuntimeError, Selection, z } from 'minato'
import postgres from 'postgres'
import { isBracketed } from '@minatojs/sql-utils'
import { CheckpointError } from '../errors.js'
import { PostgresBuilder, quoteId, type Statement } from './builder.js'
import { planTable } from './schema.js'

type Sql = postgres.Sql
type Row = Dict<unknown>

/** Serialises schema changes of one table across hosts, until the transaction ends. */
async function lockTable(tx: postgres.TransactionSql, table: string) {
  await tx`SELECT pg_advisory_xact_lock(hashtext(${'minato:' + table}))`
}

/** PostgreSQL's "unique_violation": a second insert of a taken key. */
const UNIQUE_VIOLATION = '23505'

/**
 * A minato (v3) driver for PostgreSQL through the `postgres` client, for the scalar field types
 * (see schema.ts): tables are created and missing columns added at prepare; queries, sort, limit,
 * counts, update expressions and upsert on the primary or a unique key. JSON and list fields are
 * stored as text and cannot be queried inside. A duplicate key raises minato's
 * RuntimeError('duplicate-entry'), as the other drivers do.
 */
export class PostgresDriver extends Driver<PostgresDriver.Config> {
  static override name = 'postgres'

  sql!: Sql

  async start(): Promise<void> {
    const { url, maxConnections, connectTimeout, idleTimeout } = this.config
    this.sql = postgres(url, {
      max: maxConnections,
      connect_timeout: Math.ceil(connectTimeout / 1000),
      idle_timeout: Math.ceil(idleTimeout / 1000),
      onnotice: () => {},
      // Values travel as bind parameters; this pin keeps any literal text meaning what it says too.
      connection: { standard_conforming_strings: 'on' },
    })
    this.defineTypes()
    let pinned: string
    try {
      const [row] = await this.sql`SHOW standard_conforming_strings`
      pinned = row.standard_conforming_strings as string
    } catch (error) {
      await this.sql.end({ timeout: 0 })
      throw error
    }
    if (pinned !== 'on') {
      await this.sql.end({ timeout: 0 })
      throw new CheckpointError('CHECKPOINTS_INVALID_CONFIG', `postgres: the url sets standard_conforming_strings to ${pinned}; `
        + 'this driver needs it on: remove that parameter from the url.')
    }
  }

  async stop(): Promise<void> {
    await this.sql?.end({ timeout: 5 })
  }

  /** The table's rows, one statement (driver-capabilities.ts: how the store finds it without importing this driver). */
  async countRows(table: string): Promise<number> {
    const [row] = await this.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${quoteId(table)}`)
    return row.n
  }

  /** Where the store's writer thread opens its own connection (driver-capabilities.ts). */
  writerConnection(): { url: string; connectTimeout: number } {
    return { url: this.config.url, connectTimeout: this.config.connectTimeout }
  }

  private defineTypes() {
    const toNumber = (value: unknown) => isNullable(value) ? value : Number(value)
    const numeric = ['primary', 'integer', 'unsigned', 'float', 'double', 'decimal'] as Field.Type<number>[]
    this.define<number, number>({ types: numeric, dump: (value) => value, load: toNumber as never })
    this.define<bigint, string>({
      types: ['bigint'],
      dump: (value) => isNullable(value) ? value : `${value}`,
      load: (value) => isNullable(value) ? value : BigInt(value),
    })
    this.define<Date, string>({
      types: ['date', 'timestamp'],
      dump: (value) => isNullable(value) ? value : new Date(value).toISOString(),
      load: (value) => isNullable(value) ? value : new Date(value),
    })
    this.define<object, string>({
      types: ['json'],
      dump: (value) => isNullable(value) ? value : JSON.stringify(value),
      load: (value) => typeof value === 'string' ? JSON.parse(value) : value,
    })
    this.define<string[], string>({
      types: ['list'],
      dump: (value) => Array.isArray(value) ? value.join(',') : value,
      load: (value) => value ? value.split(',') : [],
    })
  }

  /** Runs one statement (values only in `params`, as $1..) on the transaction's connection when inside one. */
  async query<T extends Row = Row>(text: string, params: unknown[] = []): Promise<T[]> {
    const client: Sql = (this as { session?: Sql }).session ?? this.sql
    try {
      this.logger.debug('> %s', text)
      return await client.unsafe(text, params as postgres.ParameterOrJSON<never>[]) as unknown as T[]
    } catch (error) {
      if ((error as { code?: string }).code === UNIQUE_VIOLATION) {
        throw new RuntimeError('duplicate-entry', (error as Error).message)
      }
      throw error
    }
  }

  async prepare(table: string): Promise<void> {
    const model = this.model(table)
    const literals = new PostgresBuilder(this, undefined, true)
    const plan = planTable(model, (key, value) => literals.escape(value, model.fields[key]))
    // Two hosts starting on one database prepare the same table at once: serialise them.
    await this.sql.begin(async (tx) => {
      await lockTable(tx, table)
      const existing = await tx`SELECT column_name FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name = ${table}`
      const have = new Set(existing.map((row) => row.column_name as string))
      if (!have.size) {
        this.logger.info('auto creating table %c', table)
        await tx.unsafe(`CREATE TABLE ${quoteId(table)} (${[...plan.columns, ...plan.constraints].join(', ')})`)
        return
      }
      for (const [index, name] of plan.names.entries()) {
        if (have.has(name)) continue
        this.logger.info('auto adding column %c to %c', name, table)
        await tx.unsafe(`ALTER TABLE ${quoteId(table)} ADD COLUMN ${plan.columns[index]}`)
      }
    })
  }

  async drop(table: string): Promise<void> {
    await this.query(`DROP TABLE IF EXISTS ${quoteId(table)}`)
  }

  async dropAll(): Promise<void> {
    for (const table of Object.keys(this.database.tables)) await this.drop(table)
  }

  async stats(): Promise<Partial<Driver.Stats>> {
    const [{ size }] = await this.query<{ size: string }>('SELECT pg_database_size(current_database()) AS size')
    return { size: Number(size), tables: {} }
  }

  async get(sel: Selection.Immutable): Promise<unknown[]> {
    const builder = new PostgresBuilder(this, sel.tables)
    const text = builder.get(sel)
    if (!text) return []
    const rows = await this.run(builder.statement(text))
    return rows.map((row) => builder.load(row, sel.model))
  }

  async eval(sel: Selection.Immutable, expr: Eval.Expr): Promise<unknown> {
    const builder = new PostgresBuilder(this, sel.tables)
    const inner = builder.get(sel.table as Selection, true, true)
    const output = builder.parseEval(expr, false)
    if (!inner) return builder.load(null, expr)
    // PostgreSQL wants every subquery in FROM named.
    const from = isBracketed(inner) ? `${inner} ${quoteId(sel.ref)}` : inner
    const [row] = await this.run(builder.statement(`SELECT ${output} AS value FROM ${from}`))
    return builder.load(row?.value, expr)
  }

  async set(sel: Selection.Mutable, update: Dict<unknown>): Promise<Driver.WriteResult> {
    const { model, table, query } = sel
    const builder = new PostgresBuilder(this, sel.tables)
    ;(builder as unknown as { modifiedTable: string }).modifiedTable = table
    const filter = builder.parseQuery(query)
    if (filter === 'FALSE') return { matched: 0 }
    const assignments = Object.entries(update).map(([key, value]) => {
      if (!(key in model.fields)) throw new RuntimeError('unsupported-expression', `cannot update "${key}" (nested fields are not supported)`)
      const sql = isEvalExpr(value) ? builder.parseEval(value) : builder.escape(value, model.fields[key])
      return `${quoteId(key)} = ${sql}`
    })
    const rows = await this.run(builder.statement(`UPDATE ${quoteId(table)} SET ${assignments.join(', ')} WHERE ${filter} RETURNING 1`))
    return { matched: rows.length, modified: rows.length }
  }

  async remove(sel: Selection.Mutable): Promise<Driver.WriteResult> {
    const builder = new PostgresBuilder(this, sel.tables)
    ;(builder as unknown as { modifiedTable: string }).modifiedTable = sel.table as string
    const filter = builder.parseQuery(sel.query)
    if (filter === 'FALSE') return {}
    const rows = await this.run(builder.statement(`DELETE FROM ${quoteId(sel.table as string)} WHERE ${filter} RETURNING 1`))
    return { matched: rows.length, removed: rows.length }
  }

  private run(statement: Statement): Promise<Row[]> {
    return this.query(statement.text, statement.params)
  }

  /** An INSERT of one row and the builder holding its values; `tail` ends the statement. */
  private insertSql(table: string, data: Dict<unknown>, model: Model, tail: string) {
    const builder = new PostgresBuilder(this)
    const row = builder.dump(data, model) as Dict<unknown>
    const keys = Object.keys(row).filter((key) => Field.available(model.fields[key]))
    const values = keys.map((key) => builder.escapePrimitive(row[key]))
    const text = `INSERT INTO ${quoteId(table)} (${keys.map(quoteId).join(', ')}) VALUES (${values.join(', ')}) ${tail}`
    return { builder, statement: builder.statement(text) }
  }

  async create(sel: Selection.Mutable, data: Dict<unknown>): Promise<unknown> {
    const { model, table } = sel
    const { builder, statement } = this.insertSql(table, data, model, 'RETURNING *')
    const [row] = await this.run(statement)
    return builder.load(row, model)
  }

  async upsert(sel: Selection.Mutable, data: Dict<unknown>[], keys: string[]): Promise<Driver.WriteResult> {
    const { model, table, ref } = sel
    const result = { inserted: 0, matched: 0, modified: 0 }
    for (const item of data) {
      if (Object.values(item).some((value) => isEvalExpr(value))) {
        throw new RuntimeError('unsupported-expression', 'upsert with update expressions is not supported by the PostgreSQL driver')
      }
      const changed = Object.keys(item).filter((key) => !keys.includes(key))
      const onConflict = changed.length
        ? `DO UPDATE SET ${changed.map((key) => `${quoteId(key)} = EXCLUDED.${quoteId(key)}`).join(', ')}`
        : 'DO NOTHING'
      const tail = `ON CONFLICT (${makeArray(keys).map(quoteId).join(', ')}) ${onConflict} RETURNING (xmax = 0) AS inserted`
      const { statement } = this.insertSql(table, executeUpdate(model.create(), item, ref), model, tail)
      const rows = await this.run(statement)
      if (rows[0]?.inserted) result.inserted++
      else result.matched++
    }
    result.modified = result.matched
    return result
  }

  async withTransaction(callback: (session?: Sql) => Promise<void>): Promise<void> {
    await this.sql.begin(async (tx) => callback(tx as unknown as Sql))
  }

  async getIndexes(table: string): Promise<Driver.Index[]> {
    const rows = await this.sql`SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = ${table}`
    const names = new Set(rows.map((row) => row.indexname as string))
    return this.model(table).indexes.filter((index) => names.has(index.name!))
  }

  async createIndex(table: string, index: Driver.Index): Promise<void> {
    const keys = Object.entries(index.keys).map(([key, direction]) => `${quoteId(key)} ${direction ?? 'asc'}`)
    const name = index.name ?? `index:${table}:${Object.keys(index.keys).join('+')}`
    // Under the table's lock: concurrent CREATE INDEX IF NOT EXISTS of one name can still collide.
    await this.sql.begin(async (tx) => {
      await lockTable(tx, table)
      await tx.unsafe(`CREATE ${index.unique ? 'UNIQUE ' : ''}INDEX IF NOT EXISTS ${quoteId(name)} ON ${quoteId(table)} (${keys.join(', ')})`)
    })
  }

  async dropIndex(_table: string, name: string): Promise<void> {
    await this.query(`DROP INDEX IF EXISTS ${quoteId(name)}`)
  }
}

export namespace PostgresDriver {
  export interface Config {
    /** postgres://user:password@host:port/database */
    url: string
    maxConnections: number
    connectTimeout: number
    idleTimeout: number
  }

  export const Config: z<Config> = z.object({
    url: z.string().pattern(/^postgres(ql)?:\/\/\S+$/).required().description('postgres://user:password@host:port/database'),
    maxConnections: z.natural().min(1).max(100).default(4).description('Pool size.'),
    connectTimeout: z.natural().role('ms').min(100).max(120_000).default(10_000).description('Connect timeout (ms).'),
    idleTimeout: z.natural().role('ms').min(1000).max(3_600_000).default(30_000).description('Idle connections close after this (ms).'),
  })
}
