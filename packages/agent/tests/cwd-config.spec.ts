/// <reference types="mocha" />
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { Context } from 'cordis'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime, { AgentError } from '@cordis-subagents/agent'
import { FAILED, makeTool, toolPlugin } from './helpers.js'

// The runtime's `cwd` (root agents' working directory, inherited by their children) is resolved against the app
// directory (`ctx.baseDir`, as every plugin of ours resolves a relative path) and checked once at load: a directory
// that does not exist, or is no directory, fails this plugin at load with INVALID_OPTIONS instead of the first ACP
// delegation with PROVIDER_START_FAILED. Creating an agent does no file system work.

describe('agents config cwd: resolved against the app directory, checked at load', () => {
  let ctx: Context
  let errors: unknown[]
  let base: string

  beforeEach(() => {
    // Not the process cwd: a relative path must resolve here, not there.
    base = mkdtempSync(join(tmpdir(), 'agents-cwd-'))
    mkdirSync(join(base, 'work', 'sub'), { recursive: true })
    writeFileSync(join(base, 'a-file'), 'not a directory')
  })

  afterEach(async () => {
    await ctx?.stop()
    rmSync(base, { recursive: true, force: true })
  })

  /** A started app whose base directory is `base`, with the real tools and agents plugins. */
  async function app(config: AgentRuntime.Config) {
    ctx = new Context()
    ctx.baseDir = base
    errors = []
    ctx.on('internal/error', (error) => { errors.push(error) })
    ctx.plugin(ToolRegistry)
    const fork = ctx.plugin(AgentRuntime, config)
    await ctx.start()
    await ctx.lifecycle.flush()
    return fork
  }

  it('a relative cwd resolves against ctx.baseDir, not the process cwd; children inherit it', async () => {
    const fork = await app({ cwd: 'work' })
    expect(errors).to.deep.equal([])
    expect(fork.runtime.status).to.not.equal(FAILED)
    const root = ctx.agents.create()
    expect(root.cwd).to.equal(join(base, 'work'))
    expect(ctx.agents.create({ parent: root }).cwd).to.equal(join(base, 'work'))
    // A create option's relative cwd follows the same rule (the app directory); an absolute one is kept.
    expect(ctx.agents.create({ cwd: 'work/sub' }).cwd).to.equal(join(base, 'work', 'sub'))
    expect(ctx.agents.create({ parent: root, cwd: 'elsewhere' }).cwd).to.equal(join(base, 'elsewhere'))
    expect(ctx.agents.create({ cwd: '/abs/root' }).cwd).to.equal('/abs/root')
  })

  const refused: [string, string, (base: string) => string][] = [
    ['an absolute path that does not exist', '/srv/agents-workspace-typo', () => '/srv/agents-workspace-typo does not exist'],
    ['a relative path that exists under the process cwd only', 'packages',
      (base) => `(resolved against the app directory ${base} to ${join(base, 'packages')}) does not exist`],
    ['a file', 'a-file', (base) => `${join(base, 'a-file')}) is not a directory`],
  ]
  for (const [what, cwd, says] of refused) {
    it(`${what} fails this plugin at load with INVALID_OPTIONS saying what to fix; the app keeps running`, async () => {
      const fork = await app({ cwd })
      // A class plugin is built in its runtime scope: that is the one that fails.
      expect(fork.runtime.status).to.equal(FAILED)
      expect(errors).to.have.length(1)
      const error = errors[0] as AgentError
      expect(error).to.be.instanceOf(AgentError)
      expect(error.code).to.equal('INVALID_OPTIONS')
      expect(error.message).to.include('agents config cwd').and.include(says(base)).and.include('Set cwd to an existing directory')
      expect(ctx.get('agents')).to.equal(undefined)
      ctx.plugin(toolPlugin(makeTool('still_works')))
      await ctx.lifecycle.flush()
      expect(ctx.tools.has('still_works')).to.equal(true)
    })
  }

  it('a config update to a directory that does not exist fails the reload the same way', async () => {
    const fork = await app({ cwd: 'work' })
    fork.update({ cwd: 'gone' })
    await ctx.lifecycle.flush()
    expect(fork.runtime.status).to.equal(FAILED)
    expect(ctx.get('agents')).to.equal(undefined)
    expect((errors[0] as AgentError).code).to.equal('INVALID_OPTIONS')
    expect((errors[0] as Error).message).to.include(join(base, 'gone'))
  })

  it('is checked once, at load: creating agents after the directory is gone does no file system work and still works', async () => {
    await app({ cwd: 'work/sub' })
    rmSync(join(base, 'work'), { recursive: true })
    const root = ctx.agents.create()
    expect(root.cwd).to.equal(join(base, 'work', 'sub'))
    expect(ctx.agents.create({ parent: root }).cwd).to.equal(join(base, 'work', 'sub'))
    expect(errors).to.deep.equal([])
  })
})
