// The serve-acp bin's app stops only once its checkpoints store has: cordis does not await a service's
// stop, and the bin exits (process.exit) right after the app's stop resolves, which would cut the store's
// writer thread off mid-close. Checked on the bin's own cordis app (`cordis-app.ts`) through the real
// loader: when its stop resolves, the SQLite writer thread has ended.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { threadCount } from '@cordis-subagents/test-support'
import { cordisApp } from '../packages/serve-acp/src/cordis-app.js'

const CONFIG = `- id: minato
  name: minato
- id: sqlite
  name: '@minatojs/driver-sqlite'
  config:
    path: data/checkpoints.db
- id: checkpoints
  name: '@cordis-subagents/checkpoints'
`


describe('serve-acp: the bin\'s cordis app stops after its checkpoints store', function () {
  this.timeout(60_000)
  let dir: string
  let cwd: string

  before(() => { cwd = process.cwd() })
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'serve-acp-store-stop-'))
    mkdirSync(join(dir, 'data'))
    writeFileSync(join(dir, 'cordis.yml'), CONFIG)
    // The SQLite path is relative to the app's base directory: the working directory, as for the bin.
    process.chdir(dir)
  })
  afterEach(() => {
    process.chdir(cwd)
    rmSync(dir, { recursive: true, force: true })
  })

  async function startAndStop(): Promise<number> {
    const app = await cordisApp(join(dir, 'cordis.yml'))
    await app.start(() => 0, 30_000)
    const running = threadCount()
    await app.stop()
    return running
  }

  it('when the app\'s stop resolves, the store\'s writer thread has ended (the file is closed)', async () => {
    // A first start and stop: the threads that stay for good (libuv's pool) are counted in.
    await startAndStop()
    const before = threadCount()
    const running = await startAndStop()
    expect(running, 'the writer thread ran').to.be.greaterThan(before)
    expect(threadCount(), 'threads once the stop resolved').to.be.at.most(before)
    rmSync(join(dir, 'data'), { recursive: true })
  })
})
