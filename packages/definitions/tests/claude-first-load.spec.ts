/// <reference types="mocha" />
// The first read of a Claude agents directory lets the event loop turn between files (up to 200 files
// of 256 KiB of YAML each would otherwise hold it for seconds), while the entry keeps its promise: it
// is loading until every agent is defined, all together, and then active. Counted in loop turns, not timed.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import type { ForkScope } from 'cordis'
import { eventually } from '@cordis-subagents/test-support'
import * as Claude from '@cordis-subagents/definitions/claude'
import { AgentDirectory } from '../src/claude/directory.js'
import { parseAgentFile } from '../src/claude/parse.js'
import { ACTIVE, type DefinitionsApp, LOADING, startApp } from './app.js'

const agent = (does: string) => `---\ndescription: ${does}\n---\nBe ${does}\n`
const FILES = 40
const fileName = (i: number) => `a${String(i).padStart(2, '0')}.md`

/** Calls `look` at every turn of the event loop (setImmediate) until stopped. */
function everyTurn(look: () => void): () => void {
  let stopped = false
  const turn = () => {
    if (stopped) return
    look()
    setImmediate(turn)
  }
  setImmediate(turn)
  return () => { stopped = true }
}

describe('definitions: the first read of a Claude agents directory', function () {
  this.timeout(20_000)

  it('AgentDirectory.read lets the event loop turn between files', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'definitions-first-'))
    try {
      const agentsDir = join(dir, 'agents')
      mkdirSync(agentsDir)
      for (let i = 0; i < FILES; i++) writeFileSync(join(agentsDir, fileName(i)), agent(`agent ${i}`))
      let parsed = 0
      const parse: typeof parseAgentFile = (...args) => {
        parsed++
        return parseAgentFile(...args)
      }
      const directory = new AgentDirectory(agentsDir, { provider: 'spawn', tools: {}, models: {} }, dir, { warn: () => {}, parse })
      const seen: number[] = []
      const stop = everyTurn(() => void seen.push(parsed))
      const definitions = await directory.read()
      stop()
      expect(definitions).to.have.length(FILES)
      expect(seen.some((count) => count > 0 && count < FILES), `parses seen at the loop's turns: ${seen.join(',')}`).to.equal(true)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  describe('through the entry', () => {
    let app: DefinitionsApp
    let agentsDir: string

    beforeEach(async () => {
      app = await startApp()
      agentsDir = join(app.dir, 'agents')
      mkdirSync(agentsDir)
      for (let i = 0; i < FILES; i++) writeFileSync(join(agentsDir, fileName(i)), agent(`agent ${i}`))
    })
    afterEach(async () => { await app.stop() })

    const count = () => app.ctx.agentDefinitions.list().length

    it('is loading with none of its agents while the loop turns, then active with all of them', async () => {
      const seen: { status: number; count: number }[] = []
      let fork: ForkScope | undefined
      const stop = everyTurn(() => void seen.push({ status: fork!.status, count: count() }))
      fork = app.ctx.plugin(Claude, { dir: 'agents', watch: false })
      await app.ctx.lifecycle.flush()
      stop()
      expect(fork.status).to.equal(ACTIVE)
      expect(count()).to.equal(FILES)
      expect(seen.some((look) => look.status === LOADING && look.count === 0), JSON.stringify(seen.slice(0, 5))).to.equal(true)
      // All together: never some of them.
      expect(seen.every((look) => look.count === 0 || look.count === FILES)).to.equal(true)
      expect(seen.every((look) => look.count === 0 || look.status === ACTIVE)).to.equal(true)
    })

    it('a save made while it reads is not lost', async () => {
      let turns = 0
      let fork: ForkScope | undefined
      const stop = everyTurn(() => {
        // Some turns in (the first files read, about six turns each; the entry still loading): the first file is saved again.
        if (++turns === 20 && fork!.status === LOADING) writeFileSync(join(agentsDir, fileName(0)), agent('edited while loading'))
      })
      fork = app.ctx.plugin(Claude, { dir: 'agents', debounce: 20 })
      await app.ctx.lifecycle.flush()
      stop()
      expect(fork.status).to.equal(ACTIVE)
      await eventually(() => app.ctx.agentDefinitions.get('a00')?.does === 'edited while loading', 'the save made during the read reloaded')
      expect(count()).to.equal(FILES)
    })

    it('an entry unloaded while it reads defines nothing and reports no error', async () => {
      let fork: ForkScope | undefined
      let disposed = false
      const stop = everyTurn(() => {
        if (!disposed && fork!.status === LOADING) {
          disposed = true
          fork!.dispose()
        }
      })
      fork = app.ctx.plugin(Claude, { dir: 'agents', debounce: 20 })
      await app.ctx.lifecycle.flush()
      stop()
      expect(count()).to.equal(0)
      expect(app.errors).to.deep.equal([])
      // A save after the unload reads nothing (no watcher is left).
      writeFileSync(join(agentsDir, fileName(1)), agent('after the unload'))
      await new Promise((resolve) => setTimeout(resolve, 200))
      expect(count()).to.equal(0)
    })
  })
})
