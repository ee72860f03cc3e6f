/// <reference types="mocha" />
import { expect } from 'chai'
import { describePrompt, describeTool } from '@cordis-subagents/subagent-tool'
import { LABEL_DESCRIPTION } from '../src/wording.js'
import {
  call, FAILED, type Harness, INPUT, loadProvider, loadTool, NONE, ProviderControl, setup, SubagentTool,
} from './helpers.js'

function errorText(errors: unknown[]): string {
  return errors.map((error) => (error instanceof Error ? error.message : String(error))).join('\n')
}

describe('subagent-tool: config', () => {
  let h: Harness

  beforeEach(async () => {
    h = await setup()
  })

  afterEach(async () => {
    await h.stop()
  })

  it('omitted options add no keys to the resolved config', () => {
    const config = SubagentTool.Config({ provider: 'x' })
    expect(config).to.deep.equal({ provider: 'x', toolName: 'subagent', timeout: 30 * 60_000, maxOutputBytes: 64 * 1024, mode: 'sync', onTurnEnd: 'wait', nested: false, questions: 'answer', reattach: false })
    for (const key of ['agentOptions', 'toolFilter', 'persona', 'maxDepth']) expect(config).to.not.have.property(key)
  })

  it('mode, onTurnEnd and unreadResults take only their listed values', () => {
    expect(SubagentTool.Config({ provider: 'x', mode: 'background', onTurnEnd: 'end' })).to.include({ mode: 'background', onTurnEnd: 'end' })
    expect(() => SubagentTool.Config({ provider: 'x', mode: 'later' as never })).to.throw()
    expect(() => SubagentTool.Config({ provider: 'x', onTurnEnd: 'drop' as never })).to.throw()
    expect(SubagentTool.Config({ provider: 'x', mode: 'background', unreadResults: 'feed' })).to.include({ unreadResults: 'feed' })
    expect(() => SubagentTool.Config({ provider: 'x', unreadResults: 'wake' as never })).to.throw()
  })

  it('omitted options add no keys to the request the provider receives', async () => {
    const spawn = new ProviderControl()
    spawn.onRun = (run) => run.complete()
    await loadProvider(h.ctx, spawn, { name: 'spawn' })
    await loadTool(h.ctx, { provider: 'spawn' })
    await call(h.ctx, INPUT)
    const [request] = spawn.starts
    for (const key of ['agentOptions', 'toolFilter', 'persona', 'maxDepth', 'budget', 'resume']) expect(request).to.not.have.property(key)
    expect(request.prompt).to.equal(INPUT.prompt)
    expect(request.label).to.equal(INPUT.description)
  })

  it('configured options reach the provider', async () => {
    const spawn = new ProviderControl()
    spawn.onRun = (run) => run.complete()
    await loadProvider(h.ctx, spawn, { name: 'spawn' })
    await loadTool(h.ctx, {
      provider: 'spawn',
      agentOptions: { model: 'scripted:small' },
      persona: 'You are terse.',
      toolFilter: { deny: ['shell'] },
      maxDepth: 3,
      budget: { maxSteps: 7 },
      resume: true,
    })
    await call(h.ctx, INPUT)
    const [request] = spawn.starts
    expect(request.resume).to.equal(true)
    expect(request.agentOptions).to.deep.equal({ model: 'scripted:small' })
    expect(request.persona).to.equal('You are terse.')
    expect(request.toolFilter!.deny).to.deep.equal(['shell'])
    expect(request.toolFilter!.allow).to.equal(undefined)
    expect(request.maxDepth).to.equal(3)
  })

  const rejected: Array<[string, Record<string, unknown>, string]> = [
    ['an explicit empty toolFilter', { toolFilter: {} }, 'toolFilter'],
    ['a toolFilter with only an empty deny list', { toolFilter: { deny: [] } }, 'toolFilter'],
    ['an invalid toolName', { toolName: 'bad name' }, 'toolName'],
    ['an empty toolName', { toolName: '' }, 'toolName'],
    ['a negative maxDepth', { maxDepth: -1 }, 'maxDepth'],
    ['a fractional maxDepth', { maxDepth: 1.5 }, 'maxDepth'],
    ['a negative timeout', { timeout: -1 }, 'timeout'],
    ['a non-numeric timeout', { timeout: 'soon' }, 'timeout'],
    ['a timeout beyond what Node timers honour', { timeout: 2 ** 31 }, 'timeout'],
    ['a zero maxOutputBytes', { maxOutputBytes: 0 }, 'maxOutputBytes'],
    ['an empty provider', { provider: '' }, 'provider'],
    ['a provider name no provider can have', { provider: 'spawn ' }, 'provider'],
    ['a blank persona', { persona: '  ' }, 'persona'],
    ['a blank model', { agentOptions: { model: '' } }, 'model'],
    ['an empty name in toolFilter.allow', { toolFilter: { allow: ['read', ''] } }, 'toolFilter.allow[1]'],
    ['a malformed name in toolFilter.deny', { toolFilter: { deny: ['bad name'] } }, 'toolFilter.deny[0]'],
  ]
  for (const [what, patch, key] of rejected) {
    it(`rejects ${what} at load, naming \`${key}\`; nothing is registered or reserved`, async () => {
      const spawn = new ProviderControl()
      await loadProvider(h.ctx, spawn, { name: 'spawn' })
      const fork = await loadTool(h.ctx, { provider: 'spawn', ...patch })
      expect(fork.status).to.equal(FAILED)
      expect(h.errors).to.have.length(1)
      expect(errorText(h.errors)).to.contain(key)
      expect(h.ctx.tools.list()).to.deep.equal([])
      // The provider is untouched and the default name is still free.
      expect(h.ctx.subagents.get('spawn')).to.not.equal(undefined)
      const good = await loadTool(h.ctx, { provider: 'spawn' })
      expect(good.status).to.not.equal(FAILED)
      expect(h.ctx.tools.has('subagent')).to.equal(true)
    })
  }

  it('accepts `timeout: 0` (no limit) and an explicit allow-list', async () => {
    const fork = await loadTool(h.ctx, { provider: 'spawn', timeout: 0, toolFilter: { allow: ['read'] } })
    expect(fork.status).to.not.equal(FAILED)
    expect(h.errors).to.deep.equal([])
  })
})

describe('subagent-tool: duplicate toolName', () => {
  let h: Harness

  beforeEach(async () => {
    h = await setup()
  })

  afterEach(async () => {
    await h.stop()
  })

  for (const providersFirst of [true, false]) {
    for (const [first, second] of [['spawn', 'acp'], ['acp', 'spawn']]) {
      it(`the second load fails at load (${first} tool first, providers ${providersFirst ? 'before' : 'after'} the tools); the first keeps working`, async () => {
        const controls: Record<string, ProviderControl> = { spawn: new ProviderControl(), acp: new ProviderControl() }
        const loadProviders = async () => {
          await loadProvider(h.ctx, controls.spawn, { name: 'spawn' })
          await loadProvider(h.ctx, controls.acp, { name: 'acp', capabilities: NONE })
        }
        if (providersFirst) await loadProviders()
        const winner = await loadTool(h.ctx, { provider: first })
        const loser = await loadTool(h.ctx, { provider: second })
        expect(winner.status).to.not.equal(FAILED)
        expect(loser.status).to.equal(FAILED)
        expect(h.errors).to.have.length(1)
        expect((h.errors[0] as { code?: string }).code).to.equal('DUPLICATE_TOOL')
        expect(errorText(h.errors)).to.contain('"subagent"')
        if (!providersFirst) await loadProviders()

        // Providers are never affected by a tool's configuration.
        expect(h.ctx.subagents.list().map((p) => p.name)).to.deep.equal(['spawn', 'acp'])
        // The first keeps working, bound to its own provider; the failed one never mounts.
        expect(h.ctx.tools.list().map((spec) => spec.name)).to.deep.equal(['subagent'])
        controls[first].onRun = (run) => run.complete(`via ${first}`)
        const result = await call(h.ctx, INPUT)
        expect(result.content).to.equal(`via ${first}`)
        expect(controls[second].starts).to.have.length(0)
        expect(h.errors).to.have.length(1)
      })
    }
  }

  it('after the winner is unloaded, the name can be loaded again', async () => {
    await loadProvider(h.ctx, new ProviderControl(), { name: 'spawn' })
    const winner = await loadTool(h.ctx, { provider: 'spawn' })
    const loser = await loadTool(h.ctx, { provider: 'spawn' })
    expect(loser.status).to.equal(FAILED)
    winner.dispose()
    const again = await loadTool(h.ctx, { provider: 'spawn' })
    expect(again.status).to.not.equal(FAILED)
    expect(h.ctx.tools.has('subagent')).to.equal(true)
  })
})

describe('subagent-tool: wording and model-facing schema', () => {
  let h: Harness

  beforeEach(async () => {
    h = await setup()
  })

  afterEach(async () => {
    await h.stop()
  })

  function spec(name = 'subagent') {
    const found = h.ctx.tools.list().find((s) => s.name === name)
    if (!found) throw new Error(`tool ${name} is not registered`)
    return found
  }

  it('the parameters are exactly { description, prompt }, both required, nothing else allowed', async () => {
    await loadProvider(h.ctx, new ProviderControl(), { name: 'spawn' })
    await loadTool(h.ctx, { provider: 'spawn' })
    expect(spec().parameters).to.deep.equal({
      type: 'object',
      properties: {
        description: { type: 'string', minLength: 1, maxLength: 120, description: LABEL_DESCRIPTION },
        prompt: { type: 'string', minLength: 1, description: describePrompt({ inheritsParentContext: false }) },
      },
      required: ['description', 'prompt'],
      additionalProperties: false,
    })
  })

  it('a fresh child (inheritsParentContext false) is described as not seeing the conversation', async () => {
    await loadProvider(h.ctx, new ProviderControl(), { name: 'spawn' })
    await loadTool(h.ctx, { provider: 'spawn' })
    const { description } = spec()
    expect(description).to.equal(describeTool({ inheritsParentContext: false }))
    expect(description).to.contain('does not see this conversation')
    expect(description).to.contain('standalone')
    expect(description).to.contain('Only its final answer comes back')
    expect(description).to.not.contain('Runs on')
  })

  it('an inheriting child is described as seeing the completed turns, not the current one', async () => {
    await loadProvider(h.ctx, new ProviderControl(), { name: 'fork', inheritsParentContext: true })
    await loadTool(h.ctx, { provider: 'fork' })
    const { description, parameters } = spec()
    expect(description).to.equal(describeTool({ inheritsParentContext: true }))
    expect(description).to.contain('completed turns')
    expect(description).to.contain('does not see the turn you are in now')
    expect(description).to.contain('Only its final answer comes back')
    expect((parameters.properties as any).prompt.description).to.equal(describePrompt({ inheritsParentContext: true }))
  })

  it('the two wordings differ, and each ends with the provider description when there is one', () => {
    const fresh = describeTool({ inheritsParentContext: false })
    const inheriting = describeTool({ inheritsParentContext: true })
    expect(fresh).to.not.equal(inheriting)
    expect(describePrompt({ inheritsParentContext: false })).to.not.equal(describePrompt({ inheritsParentContext: true }))
    expect(describeTool({ inheritsParentContext: false, description: 'Claude Code over ACP' })).to.equal(`${fresh} Runs on: Claude Code over ACP.`)
    // No doubled full stop when the provider's description ends with one.
    expect(describeTool({ inheritsParentContext: false, description: 'Claude Code over ACP. ' })).to.equal(`${fresh} Runs on: Claude Code over ACP.`)
  })

  it('the wording is re-derived when the provider is reloaded with a different inheritsParentContext', async () => {
    const provider = await loadProvider(h.ctx, new ProviderControl(), { name: 'child', description: 'in-process' })
    await loadTool(h.ctx, { provider: 'child' })
    expect(spec().description).to.equal(describeTool({ inheritsParentContext: false, description: 'in-process' }))

    provider.update({ name: 'child', description: 'in-process', inheritsParentContext: true })
    await h.ctx.lifecycle.flush()
    expect(spec().description).to.equal(describeTool({ inheritsParentContext: true, description: 'in-process' }))
    expect((spec().parameters.properties as any).prompt.description).to.equal(describePrompt({ inheritsParentContext: true }))

    provider.update({ name: 'child', inheritsParentContext: false })
    await h.ctx.lifecycle.flush()
    expect(spec().description).to.equal(describeTool({ inheritsParentContext: false }))
  })
})

describe('subagent-tool: mount errors', () => {
  let h: Harness

  beforeEach(async () => {
    h = await setup()
  })

  afterEach(async () => {
    await h.stop()
  })

  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['persona', { persona: 'You are terse.' }, 'persona'],
    ['toolFilter', { toolFilter: { allow: ['read'] } }, 'toolFilter'],
    ['maxDepth', { maxDepth: 2 }, 'maxDepth'],
  ]
  for (const [what, patch, key] of cases) {
    for (const toolFirst of [false, true]) {
      it(`${what} on a provider without the capability: not mounted, warning logged, provider kept (${toolFirst ? 'tool' : 'provider'} first)`, async () => {
        const acp = new ProviderControl()
        if (!toolFirst) await loadProvider(h.ctx, acp, { name: 'acp', capabilities: NONE })
        const tool = await loadTool(h.ctx, { provider: 'acp', ...patch })
        if (toolFirst) await loadProvider(h.ctx, acp, { name: 'acp', capabilities: NONE })
        expect(tool.status).to.not.equal(FAILED)
        expect(h.ctx.tools.has('subagent')).to.equal(false)
        const warnings = h.toolLogs('warn')
        expect(warnings).to.have.length(1)
        expect(warnings[0].content).to.contain('"subagent"').and.to.contain('"acp"').and.to.contain(key)
        expect(h.ctx.subagents.get('acp')).to.not.equal(undefined)
        expect(h.errors).to.deep.equal([])
      })
    }
  }

  it('the tool mounts once the provider is reloaded with the capability, and unmounts when it loses it', async () => {
    const control = new ProviderControl()
    const provider = await loadProvider(h.ctx, control, { name: 'p', capabilities: NONE })
    await loadTool(h.ctx, { provider: 'p', persona: 'You are terse.' })
    expect(h.ctx.tools.has('subagent')).to.equal(false)

    provider.update({ name: 'p', capabilities: { persona: true } })
    await h.ctx.lifecycle.flush()
    expect(h.ctx.tools.has('subagent')).to.equal(true)
    control.onRun = (run) => run.complete()
    await call(h.ctx, INPUT)
    expect(control.starts[0].persona).to.equal('You are terse.')

    provider.update({ name: 'p', capabilities: NONE })
    await h.ctx.lifecycle.flush()
    expect(h.ctx.tools.has('subagent')).to.equal(false)
    expect(h.toolLogs('warn')).to.have.length(2)
    expect(h.ctx.subagents.get('p')).to.not.equal(undefined)
  })

  it('a mount error on one load does not affect another load on the same provider', async () => {
    await loadProvider(h.ctx, new ProviderControl(), { name: 'acp', capabilities: NONE })
    await loadTool(h.ctx, { provider: 'acp', toolName: 'strict_acp', maxDepth: 1 })
    await loadTool(h.ctx, { provider: 'acp', toolName: 'subagent_acp' })
    expect(h.ctx.tools.list().map((s) => s.name)).to.deep.equal(['subagent_acp'])
  })
})

describe('@cordis-subagents/subagent-tool entry (as the loader sees it)', () => {
  it('exposes name, reusable, inject, Config and apply, and no default export', async () => {
    const mod: Record<string, unknown> = await import('@cordis-subagents/subagent-tool')
    expect(mod.default).to.equal(undefined)
    expect(mod.name).to.equal('subagent-tool')
    expect(mod.reusable).to.equal(true)
    expect(mod.inject).to.deep.equal(['tools', 'subagents'])
    expect(mod.Config).to.be.a('function')
    expect(mod.apply).to.be.a('function')
    // What @cordisjs/loader does: `exports.default ?? exports`.
    const plugin = (mod.default ?? mod) as typeof SubagentTool
    expect(plugin.inject).to.deep.equal(['tools', 'subagents'])
  })

  it('loads twice from the same module object (reusable), with separate configs', async () => {
    const h = await setup()
    try {
      const mod = await import('@cordis-subagents/subagent-tool')
      await loadProvider(h.ctx, new ProviderControl(), { name: 'spawn' })
      await loadProvider(h.ctx, new ProviderControl(), { name: 'acp', capabilities: NONE })
      h.ctx.plugin(mod as any, { provider: 'spawn' })
      h.ctx.plugin(mod as any, { provider: 'acp', toolName: 'subagent_acp' })
      await h.ctx.lifecycle.flush()
      expect(h.ctx.tools.list().map((s) => s.name).sort()).to.deep.equal(['subagent', 'subagent_acp'])
      expect(h.errors).to.deep.equal([])
    } finally {
      await h.stop()
    }
  })
})
