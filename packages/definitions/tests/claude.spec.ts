/// <reference types="mocha" />
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'chai'
import { eventually } from '@cordis-subagents/test-support'
import * as Agents from '@cordis-subagents/definitions/agents'
import * as Claude from '@cordis-subagents/definitions/claude'
import { codeOf, type DefinitionsApp, FAILED, startApp } from './app.js'

const REVIEWER = `---
name: reviewer
description: Reviews a change for bugs and risky edits.
tools: Read, Grep, list_files
model: sonnet
color: purple
permissionMode: acceptEdits
---
You review code. Report each problem with its file and line.
`

describe('definitions: Claude Code agent files', function () {
  this.timeout(20_000)
  let app: DefinitionsApp
  let agentsDir: string

  beforeEach(async () => {
    app = await startApp()
    agentsDir = join(app.dir, '.claude/agents')
    mkdirSync(agentsDir, { recursive: true })
  })
  afterEach(async () => { await app.stop() })

  it('maps name, description, tools (through `tools`) and model (through `models`); the body is the soul; the rest is ignored', async () => {
    writeFileSync(join(agentsDir, 'reviewer.md'), REVIEWER)
    writeFileSync(join(agentsDir, 'scout.md'), '---\ndescription: Looks around.\ntools: [list_files]\nmodel: inherit\n---\n\n')
    writeFileSync(join(agentsDir, 'notes.txt'), 'not an agent')
    await app.load(Claude, { watch: false, provider: 'fork', tools: { Read: 'read_file', Grep: 'search' }, models: { sonnet: 'demo:big' } })
    const reviewer = app.ctx.agentDefinitions.get('reviewer')!
    expect(reviewer).to.include({ does: 'Reviews a change for bugs and risky edits.', model: 'demo:big', provider: 'fork', source: join(agentsDir, 'reviewer.md') })
    expect(reviewer.uses).to.deep.equal({ allow: ['read_file', 'search', 'list_files'] })
    expect(reviewer.soul).to.equal('You review code. Report each problem with its file and line.')
    expect(reviewer.team).to.deep.equal([])
    expect(reviewer).to.not.have.property('color')
    // No name: the file's; `inherit`: the parent's model; an empty body: the provider's soul.
    const scout = app.ctx.agentDefinitions.get('scout')!
    expect(scout).to.not.have.property('model')
    expect(scout).to.not.have.property('soul')
    expect(scout.uses).to.deep.equal({ allow: ['list_files'] })
    expect(app.ctx.agentDefinitions.list().map((d) => d.name)).to.deep.equal(['reviewer', 'scout'])
  })

  it('a model alias not mapped keeps the parent\'s model; no `tools` keeps every tool', async () => {
    writeFileSync(join(agentsDir, 'a.md'), '---\nname: a\ndescription: A.\nmodel: opus\n---\nBe A.\n')
    await app.load(Claude, { watch: false })
    const a = app.ctx.agentDefinitions.get('a')!
    expect(a).to.not.have.property('model')
    expect(a).to.not.have.property('uses')
  })

  it('a bad file fails the entry at load with AGENT_FILE naming the file', async () => {
    writeFileSync(join(agentsDir, 'good.md'), '---\ndescription: Good.\n---\nFine.\n')
    writeFileSync(join(agentsDir, 'bad.md'), 'no front matter here\n')
    const fork = await app.load(Claude, { watch: false })
    expect(fork.status).to.equal(FAILED)
    expect(codeOf(app.errors)).to.equal('AGENT_FILE')
    expect(String(app.errors.at(-1))).to.include(join(agentsDir, 'bad.md'))
    expect(app.ctx.agentDefinitions.list()).to.deep.equal([])
    writeFileSync(join(agentsDir, 'bad.md'), '---\ndescription: [unclosed\n---\nx\n')
    const again = await app.load(Claude, { watch: false })
    expect(again.status).to.equal(FAILED)
    expect(String(app.errors.at(-1))).to.include('not valid YAML')
  })

  it('a rename-save, an added and a removed file reload the agents; a bad save keeps the earlier ones', async () => {
    writeFileSync(join(agentsDir, 'reviewer.md'), REVIEWER)
    const fork = await app.load(Claude, { debounce: 20 })
    const defs = app.ctx.agentDefinitions
    // An editor's safe write: a temporary file renamed over the old one.
    writeFileSync(join(agentsDir, '.reviewer.md.swp'), REVIEWER.replace('Reviews a change', 'Checks a change'))
    renameSync(join(agentsDir, '.reviewer.md.swp'), join(agentsDir, 'reviewer.md'))
    await eventually(() => defs.get('reviewer')?.does.startsWith('Checks'), 'the rename-save reloaded')
    writeFileSync(join(agentsDir, 'tester.md'), '---\ndescription: Runs the tests.\n---\nRun them.\n')
    await eventually(() => defs.get('tester'), 'the added file loaded')
    rmSync(join(agentsDir, 'tester.md'))
    await eventually(() => !defs.get('tester'), 'the removed file unloaded')
    writeFileSync(join(agentsDir, 'broken.md'), 'oops\n')
    writeFileSync(join(agentsDir, 'reviewer.md'), REVIEWER.replace('Reviews a change', 'Never seen'))
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(defs.get('reviewer')!.does).to.match(/^Checks/)
    rmSync(join(agentsDir, 'broken.md'))
    await eventually(() => defs.get('reviewer')?.does.startsWith('Never seen'), 'the directory reloaded once it was good')
    fork.dispose()
    expect(defs.list()).to.deep.equal([])
    // The watcher is closed: a later save defines nothing (well past the 20 ms debounce).
    writeFileSync(join(agentsDir, 'late.md'), '---\ndescription: Too late.\n---\n')
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(defs.list()).to.deep.equal([])
  })

  it('a config entry\'s team may name agents of a Claude directory loaded before it', async () => {
    writeFileSync(join(agentsDir, 'reviewer.md'), REVIEWER)
    await app.load(Claude, { watch: false })
    await app.load(Agents, { agents: { coordinator: { does: 'Plans.', team: ['reviewer'] } } })
    expect(app.ctx.agentDefinitions.team('coordinator').map((d) => d.source)).to.deep.equal([join(agentsDir, 'reviewer.md')])
  })
})
