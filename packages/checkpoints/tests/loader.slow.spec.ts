// The README's cordis.yml through the real @cordisjs/loader: minato, the SQLite driver on a file
// under the app's directory, and ctx.checkpoints; a second start on the same file finds the data.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import type { Context } from 'cordis'
import { loaderApp } from '@cordis-subagents/test-support'
import { stopLoaderApp } from '@cordis-subagents/config-watch'
import { freshPostgres, PG_URL, rowsInFile, serviceOf } from './support.js'

const README = fileURLToPath(new URL('../README.md', import.meta.url))

/** The README's ```yaml blocks: the SQLite default, then PostgreSQL. */
function readmeSnippet(index = 0): string {
  const blocks = [...readFileSync(README, 'utf8').matchAll(/```yaml\n([\s\S]*?)```/g)].map((match) => match[1])
  if (!blocks[index]) throw new Error(`the README has no yaml block #${index}`)
  return blocks[index]
}

describe('checkpoints through @cordisjs/loader (the README\'s cordis.yml)', function () {
  let dir: string
  let ctx: Context | undefined

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'checkpoints-loader-'))
    mkdirSync(join(dir, 'data'))
  })

  afterEach(async () => {
    if (ctx) await stopLoaderApp(ctx)
    ctx = undefined
    rmSync(dir, { recursive: true, force: true })
  })

  async function start() {
    ctx = loaderApp(join(dir, 'cordis.yml'), dir)
    await ctx.start()
    return serviceOf(ctx, 'checkpoints')
  }

  it('starts from the snippet, keeps runs in data/checkpoints.db, and marks them interrupted after a restart', async () => {
    writeFileSync(join(dir, 'cordis.yml'), readmeSnippet())
    let checkpoints = await start()
    await checkpoints.save({ id: 'r1', path: 'r1', provider: 'spawn', state: 'running', transcript: ['hello'], turn: 1 })
    await stopLoaderApp(ctx!)
    ctx = undefined
    expect(readFileSync(join(dir, 'data/checkpoints.db')).subarray(0, 15).toString()).to.equal('SQLite format 3')
    checkpoints = await start()
    expect(checkpoints.interruptedAtStart).to.equal(1)
    expect(await checkpoints.load('r1')).to.include({ state: 'interrupted', turn: 1 })
  })

  it('config-watch\'s stopLoaderApp resolves once the store has stopped: every queued record is in the file, which can go at once', async () => {
    writeFileSync(join(dir, 'cordis.yml'), readmeSnippet())
    const checkpoints = await start()
    for (let i = 0; i < 200; i++) void checkpoints.record({ id: `q${i}`, path: `q${i}`, provider: 'spawn', state: 'running' }, { created: true, lazy: true })
    let stopped = false
    void checkpoints.stopped().then(() => { stopped = true })
    await stopLoaderApp(ctx!)
    ctx = undefined
    // Before, it resolved with ctx.stop(): the store's writer thread still wrote the file.
    expect(stopped, 'the store stopped when stopLoaderApp resolved').to.equal(true)
    expect(await rowsInFile(join(dir, 'data/checkpoints.db'))).to.equal(200)
    rmSync(dir, { recursive: true })
  })

  it('the PostgreSQL snippet (the url pointed at the test server) loads the driver from its subpath', async () => {
    await freshPostgres()
    const snippet = readmeSnippet(1).replace(/url: \S+/, `url: ${PG_URL}`)
    expect(snippet).to.include('@cordis-subagents/checkpoints/postgres')
    writeFileSync(join(dir, 'cordis.yml'), snippet)
    const checkpoints = await start()
    expect(checkpoints.host).to.equal('worker-1')
    await checkpoints.save({ id: 'pg1', path: 'pg1', provider: 'acp', state: 'parked', sessionId: 's' })
    expect(await checkpoints.list({ state: 'parked' })).to.have.length(1)
  })
})
