/// <reference types="mocha" />
// A Claude agents directory that holds many other files: a read looks through at most 10,000 entries
// (past that it fails with AGENT_DIR_TOO_LARGE, at load and on a reload), and a flood of changes to
// names that are not `*.md` reloads nothing and costs no look at the directory per event.
import fs, { linkSync, mkdirSync, rmSync, watch, writeFileSync } from 'node:fs'
import { syncBuiltinESMExports } from 'node:module'
import { join } from 'node:path'
import { expect } from 'chai'
import { eventually } from '@cordis-subagents/test-support'
import * as Claude from '@cordis-subagents/definitions/claude'
import { codeOf, type DefinitionsApp, FAILED, startApp } from './app.js'
import { captureLogs } from './logs.js'

const agent = (does: string) => `---\ndescription: ${does}\n---\nBe ${does}\n`
const MAX_ENTRIES = 10_000
const DEBOUNCE = 20

describe('definitions: a Claude agents directory with many other entries', function () {
  this.timeout(60_000)
  let app: DefinitionsApp
  let agentsDir: string
  let logs: ReturnType<typeof captureLogs>

  beforeEach(async () => {
    app = await startApp()
    agentsDir = join(app.dir, 'agents')
    mkdirSync(agentsDir)
    logs = captureLogs()
  })
  afterEach(async () => {
    logs.stop()
    await app.stop()
  })

  /** `count` files that are not agent files, `f0.txt` …, hard links to one file (one system call each); their paths. */
  const others = (count: number, from = 0) => {
    const base = join(app.dir, 'other.txt')
    writeFileSync(base, '')
    const paths: string[] = []
    for (let i = from; i < from + count; i++) {
      const path = join(agentsDir, `f${i}.txt`)
      linkSync(base, path)
      paths.push(path)
    }
    return paths
  }

  it(`more than ${MAX_ENTRIES} entries fail the load with AGENT_DIR_TOO_LARGE; ${MAX_ENTRIES} load`, async () => {
    writeFileSync(join(agentsDir, 'a.md'), agent('a'))
    writeFileSync(join(agentsDir, 'b.md'), agent('b'))
    const extra = others(MAX_ENTRIES - 1)
    const fork = await app.load(Claude, { dir: 'agents', watch: false })
    expect(fork.status).to.equal(FAILED)
    expect(codeOf(app.errors)).to.equal('AGENT_DIR_TOO_LARGE')
    const message = String((app.errors.at(-1) as Error).message)
    expect(message).to.include(agentsDir).and.include(String(MAX_ENTRIES)).and.include('directory of their own')
    expect(app.ctx.agentDefinitions.list()).to.deep.equal([])
    rmSync(extra[0])
    const again = await app.load(Claude, { dir: 'agents', watch: false })
    expect(again.status).to.not.equal(FAILED)
    expect(app.ctx.agentDefinitions.list().map((definition) => definition.name)).to.deep.equal(['a', 'b'])
  })

  it('a watched directory that grows past the bound keeps its agents and logs AGENT_DIR_TOO_LARGE until it shrinks', async () => {
    writeFileSync(join(agentsDir, 'a.md'), agent('v1'))
    const extra = others(MAX_ENTRIES - 1)
    await app.load(Claude, { dir: 'agents', debounce: DEBOUNCE })
    const does = () => app.ctx.agentDefinitions.get('a')?.does
    expect(does()).to.equal('v1')
    others(2, MAX_ENTRIES)
    writeFileSync(join(agentsDir, 'a.md'), agent('v2'))
    await eventually(() => logs.lines.some((line) => line.startsWith('warn agents of') && line.includes('AGENT_DIR_TOO_LARGE: ')),
      'the reload past the bound was refused')
    expect(does()).to.equal('v1')
    for (const path of extra.slice(0, 2)) rmSync(path)
    writeFileSync(join(agentsDir, 'a.md'), agent('v3'))
    await eventually(() => does() === 'v3', 'the directory reloaded once it was back within the bound')
  })

  it('a flood of changes to names that are not *.md reloads nothing and does not stat the directory per event', async () => {
    for (const name of ['a', 'b', 'c']) writeFileSync(join(agentsDir, `${name}.md`), agent(name))
    await app.load(Claude, { dir: 'agents', debounce: DEBOUNCE })
    const changed: string[][] = []
    app.ctx.on('agent-definitions/changed', (names) => void changed.push(names))
    // Counts the looks at the directory itself (the watcher checks it has not been replaced).
    let stats = 0
    const patched = fs as { statSync: typeof fs.statSync }
    const original = fs.statSync
    patched.statSync = ((path: fs.PathLike, ...rest: unknown[]) => {
      if (String(path) === agentsDir) stats++
      return (original as (...args: unknown[]) => unknown)(path, ...rest)
    }) as typeof fs.statSync
    syncBuiltinESMExports()
    // A watcher of the test's own, to know the events were delivered.
    const seen = new Set<string>()
    const sentinel = watch(agentsDir, (_event, name) => void seen.add(String(name)))
    const FLOOD = 2000
    try {
      others(FLOOD)
      await eventually(() => seen.size >= FLOOD, 'the events were delivered')
      // The point is that nothing happens: the debounce, plus slack.
      await new Promise((resolve) => setTimeout(resolve, DEBOUNCE + 300))
    } finally {
      sentinel.close()
      patched.statSync = original
      syncBuiltinESMExports()
    }
    expect(stats).to.equal(0)
    expect(changed).to.deep.equal([])
    expect(logs.lines.filter((line) => line.includes('agents of') || line.includes('agent file(s)'))).to.deep.equal([])
    // Still watching: an agent file's save reloads.
    writeFileSync(join(agentsDir, 'b.md'), agent('b, edited'))
    await eventually(() => app.ctx.agentDefinitions.get('b')?.does === 'b, edited', 'the edit reloaded')
  })
})
