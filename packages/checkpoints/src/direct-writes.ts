import SQLiteDriver from '@minatojs/driver-sqlite'
import { PostgresDriver } from './postgres/driver.js'
import { PostgresWorkerWriter } from './postgres-writer.js'
import { RUN_COLUMNS as COLUMNS, type RunRow, TABLES } from './records.js'
import { SqliteWorkerWriter, sqliteFile } from './sqlite-writer.js'
import type { DirectWriter, WriteOp } from './write-ops.js'
import { database, type StoreContext } from './store.js'

// The run table's hot writes (a run's start, park, resume and settle), written straight to the
// driver's connection with prepared statements: no minato query building, no cordis service proxy
// on the way. Everything else (reads, compare-and-set moves, retention, questions, task keys) stays
// on minato. A driver this module does not know gets no direct writer, and the store writes those
// records through minato as before.

const KNOWN = new Set<string>(COLUMNS)

/** The changed columns of an update, in the fixed order: the key of its prepared statement. */
function changedColumns(changes: Partial<RunRow>): Array<keyof RunRow> {
  const keys = Object.keys(changes) as Array<keyof RunRow>
  for (const key of keys) if (!KNOWN.has(key)) throw new Error(`checkpoints: unknown run column ${key}`)
  return COLUMNS.filter((key) => key !== 'id' && changes[key] !== undefined)
}

/** The sql.js statement and database the SQLite driver of minato holds (the parts used here). */
interface SqlJsStatement {
  run(params: unknown[]): void
  free(): boolean
}
interface SqlJsDatabase {
  prepare(sql: string): SqlJsStatement
  run(sql: string): void
  exec(sql: string): Array<{ values: unknown[][] }>
  getRowsModified(): number
}

/** SQLite through the connection minato's SQLite driver opened (an in-memory database): one transaction per batch. */
class SqliteWriter implements DirectWriter {
  readonly kind = 'sqlite'
  private readonly statements = new Map<string, SqlJsStatement>()

  constructor(private readonly db: SqlJsDatabase) {}

  private statement(key: string, text: () => string): SqlJsStatement {
    let statement = this.statements.get(key)
    if (!statement) this.statements.set(key, statement = this.db.prepare(text()))
    return statement
  }

  async run(ops: WriteOp[]): Promise<number[]> {
    const results: number[] = []
    this.db.run('BEGIN')
    try {
      for (const op of ops) {
        if (op.kind === 'insert') {
          this.statement('insert', () => `INSERT INTO \`${TABLES.runs}\` (${COLUMNS.map((c) => `\`${c}\``).join(', ')}) `
            + `VALUES (${COLUMNS.map(() => '?').join(', ')}) ON CONFLICT (\`id\`) DO NOTHING`).run(COLUMNS.map((c) => sqliteValue(op.row[c])))
        } else {
          const columns = changedColumns(op.changes)
          const key = `${op.guard ? 'g' : 'u'}:${columns.join(',')}`
          this.statement(key, () => `UPDATE \`${TABLES.runs}\` SET ${columns.map((c) => `\`${c}\` = ?`).join(', ')} WHERE \`id\` = ?`
            + (op.guard ? ' AND `state` <> \'settled\'' : '')).run([...columns.map((c) => sqliteValue(op.changes[c])), op.id])
        }
        results.push(this.db.getRowsModified())
      }
      this.db.run('COMMIT')
    } catch (error) {
      try {
        this.db.run('ROLLBACK')
      } catch {
        // Already rolled back by SQLite.
      }
      throw error
    }
    return results
  }

  async close(): Promise<void> {
    for (const statement of this.statements.values()) statement.free()
    this.statements.clear()
  }
}

/** minato's SQLite encoding: booleans as 0/1, dates as epoch milliseconds. */
function sqliteValue(value: unknown): unknown {
  if (value === undefined) return null
  if (typeof value === 'boolean') return +value
  if (value instanceof Date) return value.getTime()
  return value
}

/** A direct writer for the run table's driver, or undefined when it is neither minato's SQLite driver nor ours for PostgreSQL. */
export function directWriter(store: StoreContext): DirectWriter | undefined {
  let driver: unknown
  try {
    driver = (database(store) as unknown as { getDriver(table: string): unknown }).getDriver(TABLES.runs)
  } catch {
    return undefined
  }
  if (driver instanceof PostgresDriver) {
    const { url, connectTimeout } = (driver as unknown as { config: { url: string; connectTimeout: number } }).config
    return new PostgresWorkerWriter({ url, connectTimeout })
  }
  if (!(driver instanceof SQLiteDriver)) return undefined
  // A file: a writer thread with its own connection. In memory (nothing a second connection could open): this connection.
  const file = sqliteFile(driver as unknown as { path?: string })
  if (file) return new SqliteWorkerWriter(driver as never, file)
  const db = (driver as unknown as { db?: Partial<SqlJsDatabase> }).db
  if (db && typeof db.prepare === 'function' && typeof db.getRowsModified === 'function') return new SqliteWriter(db as SqlJsDatabase)
  return undefined
}
