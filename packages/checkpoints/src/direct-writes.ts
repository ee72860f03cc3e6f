import SQLiteDriver from '@minatojs/driver-sqlite'
import { hasWriterConnection } from './driver-capabilities.js'
import { PostgresWorkerWriter } from './postgres-writer.js'
import { TABLES } from './records.js'
import { SqliteWorkerWriter, sqliteFile } from './sqlite-writer.js'
import type { DirectWriter } from './write-ops.js'
import { statementsOf } from './writer-statements.js'
import { database, type StoreContext } from './store.js'

// The run table's hot writes (a run's start, park, resume and settle), written straight to the
// driver's connection with prepared statements: no minato query building, no cordis service proxy
// on the way. Everything else (reads, compare-and-set moves, retention, questions, task keys) stays
// on minato. A driver this module does not know gets no direct writer, and the store writes those
// records through minato as before.

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
  private readonly statementsOf = statementsOf('sqlite')

  constructor(private readonly db: SqlJsDatabase) {}

  async run(groups: string[][]): Promise<number[]> {
    const statements = this.statementsOf(groups.map((group) => JSON.parse(`[${group.join(',')}]`)))
    const results: number[] = []
    this.db.run('BEGIN')
    try {
      for (const [text, params] of statements) {
        let statement = this.statements.get(text)
        if (!statement) this.statements.set(text, statement = this.db.prepare(text))
        statement.run(params)
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

/** A direct writer for the run table's driver, or undefined when it is neither minato's SQLite driver nor ours for PostgreSQL. */
export function directWriter(store: StoreContext): DirectWriter | undefined {
  let driver: unknown
  try {
    driver = (database(store) as unknown as { getDriver(table: string): unknown }).getDriver(TABLES.runs)
  } catch {
    return undefined
  }
  // This package's PostgreSQL driver, by capability (no import of it: SQLite never loads the PostgreSQL client).
  if (hasWriterConnection(driver)) return new PostgresWorkerWriter(driver.writerConnection())
  if (!(driver instanceof SQLiteDriver)) return undefined
  // A file: a writer thread with its own connection. In memory (nothing a second connection could open): this connection.
  const file = sqliteFile(driver as unknown as { path?: string })
  if (file) return new SqliteWorkerWriter(driver as never, file)
  const db = (driver as unknown as { db?: Partial<SqlJsDatabase> }).db
  if (db && typeof db.prepare === 'function' && typeof db.getRowsModified === 'function') return new SqliteWriter(db as SqlJsDatabase)
  return undefined
}
