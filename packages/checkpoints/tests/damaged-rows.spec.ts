// A row of the run table that holds what no write stores (damaged JSON, an unknown state, a negative turn, a date
// that is not one, edited by hand or by a broken disk): `list` reports and skips it and returns the others, `load` of
// it rejects CHECKPOINT_INVALID naming the run, and retention sweeps a row of an unknown state like an ended run.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { expect } from 'chai'
import { TABLES } from '@cordis-subagents/checkpoints'
import { captureLogs } from '../../../test/support/logs.js'
import { startStore, type StoreApp } from './support.js'

type SqlDatabase = { run(sql: string): void; export(): Uint8Array; close(): void }

/** Runs `sql` on the SQLite file by a connection of its own (the store is stopped). */
async function edit(file: string, sql: string): Promise<void> {
  const module = createRequire(import.meta.url).resolve('@minatojs/sql.js')
  const init = (await import('@minatojs/sql.js')).default as (options: object) => Promise<{ Database: new (path: string) => SqlDatabase }>
  const SQL = await init({ locateFile: (name: string) => join(dirname(module), name) })
  const db = new SQL.Database(file)
  try {
    db.run(sql)
    writeFileSync(file, db.export())
  } finally {
    db.close()
  }
}

describe('checkpoints: damaged rows are reported and skipped on read', () => {
  let dir: string
  let n = 0
  let app: StoreApp | undefined
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'checkpoints-damaged-'))
  })
  afterEach(async () => {
    await app?.stop()
    app = undefined
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  /** A store whose parked runs a, b and c were saved, then `damage` (SQL on run b) done with the store stopped. */
  async function damagedStore(damage: string): Promise<{ app: StoreApp; warnings: string[] }> {
    const file = join(dir, `${++n}.db`)
    const first = await startStore({ kind: 'sqlite', path: file })
    try {
      for (const id of ['a', 'b', 'c']) {
        await first.checkpoints.save({ id, path: `root/${id}`, parent: 'root', provider: 'spawn', state: 'parked', transcript: [id], usage: { input: 1 } })
      }
    } finally {
      await first.stop()
    }
    await edit(file, `UPDATE ${TABLES.runs} SET ${damage} WHERE id = 'b'`)
    const logs = captureLogs()
    try {
      app = await startStore({ kind: 'sqlite', path: file })
      await app.checkpoints.list()
    } finally {
      logs.restore()
    }
    return { app, warnings: logs.records.filter((record) => record.type === 'warn').map((record) => record.content) }
  }

  for (const [what, damage, problem] of [
    ['usage that is not JSON', `usage = '{"in'`, 'usage is not JSON'],
    ['a transcript that is not JSON', `transcript = '[[['`, 'transcript is not JSON'],
    ['work that is not an object', `work = '[1]'`, 'work is not a JSON object'],
    ['an unknown state', `state = 'bogus'`, 'unknown state "bogus"'],
    ['a negative turn', 'turn = -3', 'turn -3'],
    ['a date that is not one', `updatedAt = 'yesterday'`, 'updatedAt is not a date'],
  ] as const) {
    it(`a row with ${what}: list gives the others and logs it, load of it rejects CHECKPOINT_INVALID`, async () => {
      const { app, warnings } = await damagedStore(damage)
      expect((await app.checkpoints.list({ state: 'parked' })).map((run) => run.id)).to.deep.equal(['a', 'c'])
      expect(warnings.some((line) => line.includes('CHECKPOINT_INVALID') && line.includes('stored run b') && line.includes(problem)),
        warnings.join('\n')).to.equal(true)
      expect((await app.checkpoints.load('a'))?.transcript).to.deep.equal(['a'])
      const error = await app.checkpoints.load('b').then(() => undefined, (error: unknown) => error)
      expect(error).to.include({ code: 'CHECKPOINT_INVALID' })
      expect((error as Error).message).to.contain('stored run b').and.contain(problem).and.contain('remove it')
    })
  }

  it('retention sweeps a row of an unknown state once it is older than the retention, like an ended run', async () => {
    const { app } = await damagedStore(`state = 'bogus'`)
    const report = await app.checkpoints.sweep(Date.now() + app.checkpoints.limits.retention + 60_000)
    expect(report.runs).to.equal(1)
    expect((await app.checkpoints.list()).map((run) => run.id)).to.deep.equal(['a', 'c'])
  })
})
