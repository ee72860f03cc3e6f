// What this package's own drivers offer beyond minato's Driver, found by capability: the modules on
// every store's path (run-count.ts, direct-writes.ts) do not import postgres/driver.ts, so a store on
// SQLite never loads the PostgreSQL client.

/** Counts a table's rows in one statement straight to the driver (no minato query building, no cordis service proxy). */
export interface CountsRows {
  countRows(table: string): Promise<number>
}

/** Where a writer thread opens a connection of its own to the driver's database (PostgreSQL). */
export interface WriterConnection {
  writerConnection(): { url: string; connectTimeout: number }
}

export function countsRows(driver: unknown): driver is CountsRows {
  return typeof (driver as Partial<CountsRows> | undefined)?.countRows === 'function'
}

export function hasWriterConnection(driver: unknown): driver is WriterConnection {
  return typeof (driver as Partial<WriterConnection> | undefined)?.writerConnection === 'function'
}
