/// <reference types="mocha" />
// A watch follows an inode: when the agents directory is replaced (a deploy's rename) or removed and
// made again, the watch moves to the new directory, so later edits still reload.
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'chai'
import { eventually } from '@cordis-subagents/test-support'
import * as Claude from '@cordis-subagents/definitions/claude'
import { type DefinitionsApp, startApp } from './app.js'
import { captureLogs } from './logs.js'

const agent = (does: string) => `---\ndescription: ${does}\n---\nBe ${does}\n`

describe('definitions: a Claude agents directory that is replaced', function () {
  this.timeout(30_000)
  let app: DefinitionsApp
  let agentsDir: string
  let logs: ReturnType<typeof captureLogs>

  beforeEach(async () => {
    app = await startApp()
    agentsDir = join(app.dir, 'agents')
    mkdirSync(agentsDir)
    writeFileSync(join(agentsDir, 'a.md'), agent('v1'))
    logs = captureLogs()
    await app.load(Claude, { dir: 'agents', debounce: 20, retryDelay: 20 })
  })
  afterEach(async () => {
    logs.stop()
    await app.stop()
  })

  const does = () => app.ctx.agentDefinitions.get('a')?.does
  const warned = (code: string) => logs.lines.some((line) => line.startsWith(`warn ${code}:`) && line.includes(agentsDir))

  it('a directory renamed over the old one is read, and later edits in it reload', async () => {
    const fresh = join(app.dir, 'agents.new')
    mkdirSync(fresh)
    writeFileSync(join(fresh, 'a.md'), agent('v2'))
    rmSync(agentsDir, { recursive: true })
    renameSync(fresh, agentsDir)
    await eventually(() => does() === 'v2', 'the new directory was read')
    writeFileSync(join(agentsDir, 'a.md'), agent('v3'))
    await eventually(() => does() === 'v3', 'an edit in the new directory reloaded')
    expect(warned('AGENT_DIR_REPLACED') || warned('AGENT_DIR_GONE')).to.equal(true)
  })

  it('a directory removed keeps its agents, and one made again later is watched', async () => {
    rmSync(agentsDir, { recursive: true })
    await eventually(() => warned('AGENT_DIR_GONE'), 'the removal was warned about')
    expect(does()).to.equal('v1')
    mkdirSync(agentsDir)
    writeFileSync(join(agentsDir, 'a.md'), agent('v4'))
    await eventually(() => does() === 'v4', 'the directory made again was read')
    expect(warned('AGENT_DIR_REPLACED')).to.equal(true)
    writeFileSync(join(agentsDir, 'a.md'), agent('v5'))
    await eventually(() => does() === 'v5', 'an edit in it reloaded')
  })
})
