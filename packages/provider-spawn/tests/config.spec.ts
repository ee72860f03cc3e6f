/// <reference types="mocha" />
import { expect } from 'chai'
import { Logger } from 'cordis'
import * as Spawn from '@cordis-subagents/provider-spawn'
import { type Harness, FAILED, delegation, probeTool, routed, setup, loadTool } from './helpers.js'

describe('provider-spawn: configuration', () => {
  let h: Harness | undefined

  afterEach(async () => {
    await h?.ctx.stop()
    h = undefined
  })

  it('Config: name defaults to spawn, maxSteps and description are optional, bad values are rejected', () => {
    const ask = { askParent: false, askParentTool: 'ask_parent', maxParkedMs: 3_600_000 }
    expect(Spawn.Config({})).to.deep.equal({ name: 'spawn', ...ask })
    expect(Spawn.Config({ name: 'spawn2', maxSteps: 5, description: 'in-process' }))
      .to.deep.equal({ name: 'spawn2', maxSteps: 5, description: 'in-process', ...ask })
    expect(Spawn.Config({ askParent: true, askParentTool: 'ask_boss' })).to.include({ askParent: true, askParentTool: 'ask_boss' })
    expect(() => Spawn.Config({ askParentTool: 'no spaces' })).to.throw()
    expect(() => Spawn.Config({ name: 'has space' })).to.throw()
    expect(() => Spawn.Config({ name: '' })).to.throw()
    expect(() => Spawn.Config({ maxSteps: 0 })).to.throw()
    expect(() => Spawn.Config({ maxSteps: 1.5 })).to.throw()
    expect(Spawn.Config({ maxParkedMs: 50 })).to.include({ maxParkedMs: 50 })
    expect(() => Spawn.Config({ maxParkedMs: 0 })).to.throw()
    expect(() => Spawn.Config({ maxParkedMs: 2 ** 31 })).to.throw()
  })

  it('registers a provider with every capability and no parent context', async () => {
    h = await setup({ models: { main: routed({}) } })
    h.ctx.plugin(Spawn, { description: 'a fresh in-process agent' })
    const provider = h.ctx.subagents.get('spawn')!
    expect(provider).to.include({ name: 'spawn', description: 'a fresh in-process agent', inheritsParentContext: false })
    expect(provider.capabilities).to.deep.equal({ persona: true, toolFilter: true, depthLimit: true })
    // The tool description is derived from the provider: a fresh child needs a standalone brief.
    loadTool(h.ctx, { provider: 'spawn' })
    await h.ctx.lifecycle.flush()
    const spec = h.ctx.tools.list().find((tool) => tool.name === 'subagent')!
    expect(spec.description).to.include('does not see this conversation')
    expect(spec.description).to.include('Runs on: a fresh in-process agent.')
  })

  it('two spawn providers (spawn and spawn2) run side by side, each with its own maxSteps', async () => {
    const model = routed({
      'root task': ({ step, results }) => step === 0
        ? { toolCalls: [delegation('via one', { tool: 'subagent' }), delegation('via two', { tool: 'subagent2' })] }
        : { text: results.map((r) => `${r.isError ? 'ERR' : 'OK'} ${r.content.split('\n')[0]}`).join(' | ') },
      // Both children keep working forever; only the step limits stop them.
      'via one': () => ({ toolCalls: [{ name: 'probe', input: {} }] }),
      'via two': () => ({ toolCalls: [{ name: 'probe', input: {} }] }),
    })
    h = await setup({ models: { main: model }, tools: [probeTool([])] })
    h.ctx.plugin(Spawn, { maxSteps: 2 })
    h.ctx.plugin(Spawn, { name: 'spawn2', maxSteps: 3 })
    loadTool(h.ctx, { provider: 'spawn' })
    loadTool(h.ctx, { provider: 'spawn2', toolName: 'subagent2' })
    await h.ctx.lifecycle.flush()

    expect(h.ctx.subagents.list().map((p) => p.name)).to.deep.equal(['spawn', 'spawn2'])
    const result = await h.ctx.agents.create().run('root task')

    expect(result.text).to.equal('ERR Subagent stopped: it used all 2 model calls of its turn (maxSteps) without a final answer. Answer with what you have, or delegate a narrower task. '
      + '| ERR Subagent stopped: it used all 3 model calls of its turn (maxSteps) without a final answer. Answer with what you have, or delegate a narrower task.')
    expect(model.requests.filter((r) => r.messages[0].content === 'via one')).to.have.length(2)
    expect(model.requests.filter((r) => r.messages[0].content === 'via two')).to.have.length(3)
    expect(h.starts.map((info) => info.provider).sort()).to.deep.equal(['spawn', 'spawn2'])
    expect(h.errors).to.deep.equal([])
  })

  it('a second provider under a taken name fails alone; the first keeps working', async () => {
    const model = routed({
      'root task': ({ step, results }) => step === 0 ? { toolCalls: [delegation('child')] } : { text: results[0].content },
      child: () => ({ text: 'still here' }),
    })
    h = await setup({ models: { main: model } })
    h.ctx.plugin(Spawn)
    const saved = Logger.targets.splice(0, Logger.targets.length)
    let second
    try {
      second = h.ctx.plugin(Spawn)
      await h.ctx.lifecycle.flush()
    } finally {
      Logger.targets.push(...saved)
    }
    expect(second.status).to.equal(FAILED)
    expect(h.errors).to.have.length(1)
    expect(h.errors[0]).to.include({ code: 'DUPLICATE_PROVIDER' })

    loadTool(h.ctx, { provider: 'spawn' })
    await h.ctx.lifecycle.flush()
    expect((await h.ctx.agents.create().run('root task')).text).to.equal('still here')
  })

  it('renaming the provider by reconfiguring it moves it; the bound tool follows the name', async () => {
    const model = routed({ child: () => ({ text: 'ok' }) })
    h = await setup({ models: { main: model } })
    const fork = h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'renamed' })
    await h.ctx.lifecycle.flush()
    expect(h.ctx.tools.has('subagent')).to.equal(false)

    fork.update({ name: 'renamed' })
    await h.ctx.lifecycle.flush()
    expect(h.ctx.subagents.list().map((p) => p.name)).to.deep.equal(['renamed'])
    expect(h.ctx.tools.has('subagent')).to.equal(true)

    const run = await h.ctx.subagents.delegate('renamed', { prompt: 'child', parent: h.ctx.agents.create(), signal: new AbortController().signal })
    expect((await run.result).output).to.equal('ok')
    await run.dispose()
  })
})
