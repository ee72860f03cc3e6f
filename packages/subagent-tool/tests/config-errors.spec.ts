/// <reference types="mocha" />
import { expect } from 'chai'
import AgentDefinitions from '@cordis-subagents/definitions'
import * as Agents from '@cordis-subagents/definitions/agents'
import { CodedError } from '@cordis-subagents/shared'
import { asTool } from '@cordis-subagents/subagent-tool'
import * as SubagentControl from '@cordis-subagents/subagent-tool/control'
import { FAILED, type Harness, loadProvider, loadTool, ProviderControl, setup } from './helpers.js'

// Every config the plugin entries of this package refuse at load fails with a stable code (CONTRIBUTING.md: every error
// extends CodedError), and its message says which key to fix.

/** The load's error: a coded one (`SubagentToolError`), with `code` and a message naming `key`. */
function expectCoded(error: unknown, code: string, key: string): void {
  expect(error, String(error)).to.be.instanceOf(CodedError)
  expect((error as CodedError).code).to.equal(code)
  expect((error as Error).name).to.equal('SubagentToolError')
  expect((error as Error).message).to.contain(key)
}

describe('subagent-tool: a config refused at load has a stable code', () => {
  let h: Harness

  beforeEach(async () => {
    h = await setup()
    await loadProvider(h.ctx, new ProviderControl(), { name: 'spawn' })
  })
  afterEach(async () => { await h.stop() })

  const refused: Array<[string, Record<string, unknown>, string]> = [
    ['an empty toolFilter', { provider: 'spawn', toolFilter: {} }, 'config.toolFilter'],
    ['a toolFilter with only an empty deny list', { provider: 'spawn', toolFilter: { deny: [] } }, 'config.toolFilter'],
    ['a toolFilter entry that is no tool name', { provider: 'spawn', toolFilter: { allow: ['a', 'b c'] } }, 'config.toolFilter.allow[1]'],
    ['talk without agent', { provider: 'spawn', talk: true }, 'config.talk'],
    ['neither provider nor agent', {}, 'config.provider'],
    ['agent together with provider', { agent: 'lead', provider: 'spawn' }, 'config.provider'],
    ['agent, persona and toolFilter', { agent: 'lead', persona: 'x', toolFilter: { deny: ['x'] } }, 'config.persona, config.toolFilter.'],
    ['agent in mode background', { agent: 'lead', mode: 'background' }, 'config.mode'],
  ]
  for (const [what, config, key] of refused) {
    it(`subagent-tool: ${what} fails the load with INVALID_CONFIG naming ${key}`, async () => {
      const fork = await loadTool(h.ctx, config)
      expect(fork.status).to.equal(FAILED)
      expect(h.errors).to.have.length(1)
      expectCoded(h.errors[0], 'INVALID_CONFIG', key)
      expect(h.ctx.tools.list()).to.deep.equal([])
    })
  }

  it('subagent-tool/control: waitTimeout above maxWaitTimeout fails the load with INVALID_CONFIG naming both', async () => {
    const fork = h.ctx.plugin(SubagentControl as any, { waitTimeout: 700_000 })
    await h.ctx.lifecycle.flush()
    expect(fork.status).to.equal(FAILED)
    expect(h.errors).to.have.length(1)
    expectCoded(h.errors[0], 'INVALID_CONFIG', 'config.waitTimeout (700000) is above config.maxWaitTimeout (600000)')
    expect(h.ctx.tools.list()).to.deep.equal([])
  })

  it('asTool(): an agent that is not defined is UNKNOWN_AGENT, a name that is no tool name INVALID_OPTIONS', async () => {
    let thrown: unknown
    try { asTool(h.ctx, 'ghost') } catch (error) { thrown = error }
    expectCoded(thrown, 'UNKNOWN_AGENT', 'agent "ghost" is not defined')
    h.ctx.plugin(AgentDefinitions)
    await h.ctx.lifecycle.flush()
    h.ctx.plugin(Agents, { agents: { reviewer: { does: 'Reviews a change.' } } })
    await h.ctx.lifecycle.flush()
    thrown = undefined
    try { asTool(h.ctx, 'reviewer', { name: 'bad name' }) } catch (error) { thrown = error }
    expectCoded(thrown, 'INVALID_OPTIONS', 'options.name')
    expect(asTool(h.ctx, 'reviewer').name).to.equal('reviewer')
  })
})
