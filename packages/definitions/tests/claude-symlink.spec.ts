/// <reference types="mocha" />
// A `*.md` entry that is a symbolic link is skipped with a warning, so a link cannot turn a file outside
// the agents directory (a secret, another user's file) into an agent's system prompt sent to a model.
import { linkSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { eventually } from '@cordis-subagents/test-support'
import * as Claude from '@cordis-subagents/definitions/claude'
import { type DefinitionsApp, startApp } from './app.js'
import { captureLogs } from './logs.js'

const agent = (does: string, body: string) => `---\ndescription: ${does}\n---\n${body}\n`

describe('definitions: a symbolic link in a Claude agents directory', function () {
  this.timeout(20_000)
  let app: DefinitionsApp
  let agentsDir: string
  let outside: string
  let logs: ReturnType<typeof captureLogs>

  beforeEach(async () => {
    app = await startApp()
    agentsDir = join(app.dir, 'agents')
    mkdirSync(agentsDir)
    outside = mkdtempSync(join(tmpdir(), 'definitions-outside-'))
    writeFileSync(join(outside, 'secret.md'), agent('Outside.', 'SECRET-TOKEN-123'))
    logs = captureLogs()
  })
  afterEach(async () => {
    logs.stop()
    await app.stop()
    rmSync(outside, { recursive: true, force: true })
  })

  const symlinkWarnings = () => logs.lines.filter((line) => line.startsWith('warn AGENT_FILE_SYMLINK:'))

  it('is not read; the other files load and the warning names the link', async () => {
    symlinkSync(join(outside, 'secret.md'), join(agentsDir, 'leak.md'))
    writeFileSync(join(agentsDir, 'good.md'), agent('Good.', 'Be good.'))
    await app.load(Claude, { dir: 'agents', watch: false })
    const defs = app.ctx.agentDefinitions
    expect(defs.get('leak')).to.equal(undefined)
    expect(defs.list().map((definition) => definition.name)).to.deep.equal(['good'])
    expect(defs.list().some((definition) => definition.soul?.includes('SECRET'))).to.equal(false)
    expect(symlinkWarnings()).to.have.length(1)
    expect(symlinkWarnings()[0]).to.include(join(agentsDir, 'leak.md'))
  })

  it('a link to a file inside the directory is skipped too, and one added later is warned about once', async () => {
    writeFileSync(join(agentsDir, 'good.md'), agent('Good.', 'Be good.'))
    await app.load(Claude, { dir: 'agents', debounce: 20 })
    const defs = app.ctx.agentDefinitions
    symlinkSync(join(agentsDir, 'good.md'), join(agentsDir, 'alias.md'))
    symlinkSync(join(outside, 'secret.md'), join(agentsDir, 'later.md'))
    await eventually(() => symlinkWarnings().length >= 2, 'both links warned about')
    // Another reload while the links stay: no new warning.
    writeFileSync(join(agentsDir, 'other.md'), agent('Other.', 'Be other.'))
    await eventually(() => defs.get('other'), 'the later file loaded')
    expect(defs.list().map((definition) => definition.name)).to.deep.equal(['good', 'other'])
    expect(symlinkWarnings()).to.have.length(2)
  })

  it('a hard link is the file itself, read like any other (the README says why it is not refused)', async () => {
    // Made by someone who can write the directory, on its filesystem: the directory's writers are trusted with its prompts.
    linkSync(join(outside, 'secret.md'), join(agentsDir, 'hard.md'))
    await app.load(Claude, { dir: 'agents', watch: false })
    expect(app.ctx.agentDefinitions.get('hard')?.does).to.equal('Outside.')
    expect(symlinkWarnings()).to.deep.equal([])
  })
})
