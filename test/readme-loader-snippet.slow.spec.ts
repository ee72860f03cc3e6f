// The README's "Starting it from code" block, run as written: read from README.md (so the doc
// cannot drift from what is tested), started with node on a real cordis.yml, edited, stopped.
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { buildQuickstart, ROOT } from './helpers.js'

/** The first ```js block after "Starting it from code" in README.md. */
function readmeSnippet(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  const from = readme.indexOf('Starting it from code')
  expect(from, 'README.md has a "Starting it from code" paragraph').to.be.greaterThan(-1)
  const block = /```js\n([\s\S]*?)```/.exec(readme.slice(from))
  expect(block, 'a ```js block after it').to.not.equal(null)
  return block![1]!
}

/** A plugin that says when it is applied (with its config) and disposed. */
const PROBE = `export const name = 'probe'
export function apply(ctx, config) {
  console.log('probe applied ' + JSON.stringify(config))
  ctx.on('dispose', () => console.log('probe disposed'))
}
`

function cordisYml(dir: string, a: number) {
  return `- id: tools
  name: '@cordis-subagents/tools'
- id: probe
  name: ${JSON.stringify(join(dir, 'probe.mjs'))}
  config:
    a: ${a}
`
}

describe('README: starting a loader app from code', function () {
  this.timeout(60_000)
  let dir: string

  before(() => buildQuickstart())
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'readme-snippet-'))
  })
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  it('runs as written: reloads a save, and SIGINT stops it cleanly (no TypeError, cordis.yml untouched)', async () => {
    const snippet = readmeSnippet()
    expect(snippet).to.include('stopLoaderApp')
    writeFileSync(join(dir, 'app.mjs'), snippet)
    writeFileSync(join(dir, 'probe.mjs'), PROBE)
    // The snippet's imports resolve as in a project that installed these packages.
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir')
    const file = join(dir, 'cordis.yml')
    writeFileSync(file, cordisYml(dir, 1))

    const child = spawn(process.execPath, ['app.mjs'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    const wakers = new Set<() => void>()
    child.stdout.on('data', (chunk) => { stdout += chunk; for (const wake of wakers) wake() })
    child.stderr.on('data', (chunk) => { stderr += chunk })
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => { resolve(code); for (const wake of wakers) wake() }))
    let gone = false
    void exited.then(() => { gone = true })
    const waitFor = (text: string) => new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => done(new Error(`timed out waiting for ${JSON.stringify(text)}; stdout:\n${stdout}\nstderr:\n${stderr}`)), 15_000)
      const done = (error?: Error) => { clearTimeout(timer); wakers.delete(check); if (error) reject(error); else resolve() }
      const check = () => {
        if (stdout.includes(text)) done()
        else if (gone) done(new Error(`exited before ${JSON.stringify(text)}; stdout:\n${stdout}\nstderr:\n${stderr}`))
      }
      wakers.add(check)
      check()
    })

    try {
      await waitFor('probe applied {"a":1}')
      // An editor's safe write.
      const text = cordisYml(dir, 2)
      writeFileSync(join(dir, 'cordis.yml.swp'), text)
      renameSync(join(dir, 'cordis.yml.swp'), file)
      await waitFor('probe applied {"a":2}')
      child.kill('SIGINT')
      expect(await exited).to.equal(0)
      expect(stdout.slice(stdout.indexOf('probe applied {"a":2}'))).to.include('probe disposed')
      expect(stderr).to.not.match(/TypeError|Error/)
      expect(stdout).to.not.match(/TypeError|\[E\]/)
      expect(readFileSync(file, 'utf8')).to.equal(text)
    } finally {
      if (!gone) child.kill('SIGKILL')
      await exited
    }
  })
})
