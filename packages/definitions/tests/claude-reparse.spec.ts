/// <reference types="mocha" />
// A directory event costs only what changed: other names (an editor's swap file) are ignored, and a
// read that gives the same agents redefines nothing (no agent-definitions/changed for team tools).
import { mkdirSync, watch, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'chai'
import { eventually } from '@cordis-subagents/test-support'
import * as Claude from '@cordis-subagents/definitions/claude'
import { type DefinitionsApp, startApp } from './app.js'
import { captureLogs } from './logs.js'

const agent = (does: string) => `---\ndescription: ${does}\n---\nBe ${does}\n`
const DEBOUNCE = 20

describe('definitions: a Claude agents directory reloads only on a change to an agent', function () {
  this.timeout(20_000)
  let app: DefinitionsApp
  let agentsDir: string
  let logs: ReturnType<typeof captureLogs>

  beforeEach(async () => {
    app = await startApp()
    agentsDir = join(app.dir, 'agents')
    mkdirSync(agentsDir)
    for (const name of ['a', 'b', 'c']) writeFileSync(join(agentsDir, `${name}.md`), agent(name))
    logs = captureLogs()
  })
  afterEach(async () => {
    logs.stop()
    await app.stop()
  })

  it('an event for a name that is not *.md, and a save that changes no agent, emit no agent-definitions/changed', async () => {
    await app.load(Claude, { dir: 'agents', debounce: DEBOUNCE })
    const changed: string[][] = []
    app.ctx.on('agent-definitions/changed', (names) => void changed.push(names))
    // A watcher of the test's own, to know the events were delivered.
    const seen = new Set<string>()
    const sentinel = watch(agentsDir, (_event, name) => void seen.add(String(name)))
    try {
      writeFileSync(join(agentsDir, '.a.md.swp'), 'vim swap block')
      writeFileSync(join(agentsDir, 'notes.txt'), 'not an agent')
      await eventually(() => seen.has('.a.md.swp') && seen.has('notes.txt'), 'the events were delivered')
      // The point is that nothing happens: the debounce, plus slack.
      await new Promise((resolve) => setTimeout(resolve, DEBOUNCE + 300))
      expect(changed).to.deep.equal([])
      expect(logs.lines.filter((line) => line.includes('agents of'))).to.deep.equal([])
    } finally {
      sentinel.close()
    }
    // The same bytes saved again: the file is read, its agent is the same, nothing is redefined.
    writeFileSync(join(agentsDir, 'a.md'), agent('a'))
    await eventually(() => logs.lines.some((line) => line.startsWith('debug') && line.includes('unchanged; nothing redefined')), 'the save was read')
    expect(changed).to.deep.equal([])
    writeFileSync(join(agentsDir, 'b.md'), agent('b, edited'))
    await eventually(() => app.ctx.agentDefinitions.get('b')?.does === 'b, edited', 'the edit reloaded')
    expect(app.ctx.agentDefinitions.list().map((definition) => definition.name)).to.deep.equal(['a', 'b', 'c'])
  })
})
