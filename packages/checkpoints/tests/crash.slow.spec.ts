// A host killed with SIGKILL (no clean stop): its running run is on disk and becomes interrupted.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import { type Backend, freshPostgres, startStore, type StoreApp } from './support.js'

const CRASHER = fileURLToPath(new URL('./fixtures/crasher.ts', import.meta.url))

async function crashAfterSave(args: string[]): Promise<void> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=cordis-subagents-source', CRASHER, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000)
  try {
    const lines = createInterface({ input: child.stdout! })
    const [first] = await Promise.race([once(lines, 'line'), once(child, 'exit').then(() => ['(exited)'])])
    lines.close()
    expect(first).to.equal('saved')
  } finally {
    clearTimeout(timer)
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL')
      await once(child, 'exit')
    }
  }
}

describe('a host killed without a clean stop', function () {
  this.timeout(60_000)
  let dir: string
  let app: StoreApp | undefined

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'checkpoints-crash-'))
  })
  afterEach(async () => {
    await app?.stop()
    app = undefined
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  const backends: Array<[string, () => Promise<Backend>, string[]]> = [
    ['SQLite', async () => ({ kind: 'sqlite', path: join(dir, 'crash.db') }), ['sqlite']],
    ['PostgreSQL', async () => (await freshPostgres(), { kind: 'postgres' }), ['postgres']],
  ]
  for (const [name, prepare, args] of backends) {
    it(`${name}: the next start finds its running run and marks it interrupted`, async () => {
      const backend = await prepare()
      await crashAfterSave(backend.kind === 'sqlite' ? [...args, backend.path] : args)
      app = await startStore(backend)
      expect(app.checkpoints.interruptedAtStart).to.equal(1)
      const record = await app.checkpoints.load('crashed')
      expect(record).to.include({ state: 'interrupted', turn: 1 })
      expect(record!.transcript).to.deep.equal(['turn 1'])
    })
  }
})
