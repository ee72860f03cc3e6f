// What a store on SQLite loads: the PostgreSQL client (`postgres`) and this package's PostgreSQL driver
// stay unloaded at start and through a run's record (run-count.ts and direct-writes.ts find the driver's
// extras by capability, not by importing it). A worker thread (no subprocess: this is a fast spec)
// records every module its start resolves; importing the PostgreSQL entry point afterwards shows the
// check sees the client when it is loaded.
import { Worker } from 'node:worker_threads'
import { expect } from 'chai'

const isPostgresClient = (url: string) => /\/node_modules\/postgres\//.test(url)
const isOurPostgresDriver = (url: string) => /\/checkpoints\/src\/postgres\/driver\.ts$/.test(url)

describe('checkpoints: a store on SQLite does not load the PostgreSQL client', () => {
  it('starts, records and stops on SQLite without resolving `postgres` or the PostgreSQL driver; the PostgreSQL entry resolves both', async function () {
    // The worker compiles every TypeScript module it loads (TypeScript, in process): 4–13 s on a loaded 2-core machine.
    this.timeout(60_000)
    // Plain JavaScript that compiles the TypeScript it loads itself (no tsx: its esbuild process would outlive the worker).
    const worker = new Worker(new URL('./fixtures/sqlite-path-loads.mjs', import.meta.url), {
      execArgv: ['--conditions=cordis-subagents-source', '--no-experimental-require-module'],
    })
    let report: { sqlite: string[]; postgres: string[]; stored?: string } | undefined
    worker.once('message', (message) => {
      report = message
    })
    // It ends by itself once it has reported.
    const code = await new Promise<number>((resolve, reject) => {
      worker.once('error', reject)
      worker.once('exit', resolve)
    })
    expect(code, 'the worker exit code').to.equal(0)
    if (!report) throw new Error('the worker ended without a report')
    expect(report.stored, 'the store ran: its run was written and read back').to.equal('settled')
    expect(report.sqlite.some((url) => /driver-sqlite/.test(url)), 'the SQLite start was recorded').to.equal(true)
    expect(report.sqlite.filter(isPostgresClient), 'the postgres client on the SQLite path').to.deep.equal([])
    expect(report.sqlite.filter(isOurPostgresDriver), 'the PostgreSQL driver on the SQLite path').to.deep.equal([])
    expect(report.postgres.some(isPostgresClient), 'the PostgreSQL entry loads the client').to.equal(true)
    expect(report.postgres.some(isOurPostgresDriver), 'and the driver').to.equal(true)
  })
})
