/// <reference types="mocha" />
import { expect } from 'chai'
import * as SubagentControl from '@cordis-subagents/subagent-tool/control'
import { startHost, type Host } from '../../../test/support/host.js'
import { controlVerbs, verbsSeenBy } from '../src/verb-names.js'

const FAILED = 3

describe('@cordis-subagents/subagent-tool/control entry (as the loader sees it) and config', () => {
  let host: Host

  afterEach(async () => {
    await host?.stop()
  })

  it('is a namespace plugin: named name, inject, Config, apply, reusable; no default export', async () => {
    const mod = await import('@cordis-subagents/subagent-tool/control')
    expect(mod).to.not.have.property('default')
    expect(mod.name).to.equal('subagent-control')
    expect(mod.inject).to.deep.equal(['tools', 'subagents'])
    expect(mod.reusable).to.equal(true)
    expect(mod.Config).to.be.a('function')
    expect(mod.apply).to.be.a('function')
  })

  it('resolves bounded defaults; a wait default above the maximum or a bad prefix fails the load', async () => {
    expect(SubagentControl.Config({})).to.deep.equal({ prefix: 'subagent', waitTimeout: 60_000, maxWaitTimeout: 600_000, cancelGrace: 5_000, startWait: 10_000, replyTimeout: 30 * 60_000, pageBytes: 32 * 1024, nested: false })
    expect(() => SubagentControl.Config({ maxWaitTimeout: 2 ** 31 })).to.throw()
    expect(() => SubagentControl.Config({ prefix: 'a b' })).to.throw()
    expect(() => SubagentControl.Config({ pageBytes: 100 })).to.throw()
    expect(() => SubagentControl.Config({ prefix: 'x'.repeat(58) })).to.throw()
    host = await startHost()
    const fork = host.ctx.plugin(SubagentControl as any, { waitTimeout: 700_000 })
    await host.ctx.lifecycle.flush()
    expect(fork.status).to.equal(FAILED)
    expect(host.ctx.tools.view().list()).to.deep.equal([])
  })

  it('registers the six verbs with strict, small schemas; two loads with different prefixes coexist, the same prefix twice fails the second', async () => {
    host = await startHost()
    host.ctx.plugin(SubagentControl as any, {})
    host.ctx.plugin(SubagentControl as any, { prefix: 'bg' })
    const twice = host.ctx.plugin(SubagentControl as any, {})
    await host.ctx.lifecycle.flush()
    expect(twice.status).to.equal(FAILED)
    const list = host.ctx.tools.view().list()
    expect(list.map((tool) => tool.name).sort()).to.deep.equal([
      'bg_cancel', 'bg_continue', 'bg_reply', 'bg_result', 'bg_send', 'bg_status', 'bg_wait',
      'subagent_cancel', 'subagent_continue', 'subagent_reply', 'subagent_result', 'subagent_send', 'subagent_status', 'subagent_wait',
    ])
    for (const tool of list) expect(tool.parameters, tool.name).to.include({ additionalProperties: false })
    const wait = list.find((tool) => tool.name === 'subagent_wait')!.parameters as { properties: Record<string, { maximum?: number }> }
    expect(Object.keys(wait.properties)).to.deep.equal(['handles', 'mode', 'timeoutSeconds'])
    expect(wait.properties.timeoutSeconds.maximum).to.equal(600)
    const send = list.find((tool) => tool.name === 'subagent_send')!.parameters as { required: string[] }
    expect(send.required).to.deep.equal(['handle', 'message'])
    // Each load's names are its own set (the failed third load added none); a caller is told the newest it can call.
    const sets = controlVerbs(host.ctx.subagents).sets
    expect(sets.map((set) => set.wait)).to.deep.equal(['subagent_wait', 'bg_wait'])
    const seen = verbsSeenBy(controlVerbs(host.ctx.subagents), host.ctx.tools.view(), 'wait', 'status', 'cancel', 'send', 'reply', 'result')
    const { wait: w, status: s, cancel: c, send: se, reply: r, result: re } = seen!
    expect({ wait: w, status: s, cancel: c, send: se }).to.deep.equal({ wait: 'bg_wait', status: 'bg_status', cancel: 'bg_cancel', send: 'bg_send' })
    expect(r).to.equal('bg_reply')
    const reply = list.find((tool) => tool.name === 'subagent_reply')!.parameters as { required: string[] }
    expect(reply.required).to.deep.equal(['handle', 'answer'])
    expect(re).to.equal('bg_result')
    const result = list.find((tool) => tool.name === 'subagent_result')!.parameters as { required: string[]; properties: Record<string, { maximum?: number }> }
    expect(result.required).to.deep.equal(['handle'])
    expect(result.properties.length.maximum).to.equal(32 * 1024)
    const continued = list.find((tool) => tool.name === 'subagent_continue')!.parameters as { required: string[] }
    expect(continued.required).to.deep.equal(['subagent', 'message'])
  })

  it('by default a child (depth >= 1) has no verbs: not listed, and a call by name is an unknown tool; `nested: true` gives them to children', async () => {
    host = await startHost()
    const plain = host.ctx.plugin(SubagentControl as any, {})
    host.ctx.plugin(SubagentControl as any, { prefix: 'deep', nested: true })
    await host.ctx.lifecycle.flush()
    const root = host.ctx.agents.create({})
    const child = host.ctx.agents.create({ parent: root })
    const verbs = (prefix: string) => ['cancel', 'continue', 'reply', 'result', 'send', 'status', 'wait'].map((verb) => `${prefix}_${verb}`)
    expect(root.tools.names().sort()).to.deep.equal([...verbs('deep'), ...verbs('subagent')])
    expect(child.tools.names().sort()).to.deep.equal(verbs('deep'))
    const exec = { signal: new AbortController().signal, agent: child, toolCallId: 'c' }
    const hidden = await child.tools.execute({ name: 'subagent_status', input: {} }, exec)
    expect(hidden).to.deep.equal({ isError: true, content: `Unknown tool "subagent_status". Available tools: deep_wait, deep_status, deep_cancel, deep_send, deep_reply, deep_result, deep_continue.` })
    const nested = await child.tools.execute({ name: 'deep_status', input: {} }, exec)
    expect(nested.content).to.equal('You have no background subagents. Start one with a background subagent tool first.')
    plain.update({ nested: true })
    await host.ctx.lifecycle.flush()
    expect(child.tools.has('subagent_status')).to.equal(true)
  })

  it('a verb rejects extra fields and bad handles before it runs', async () => {
    host = await startHost()
    host.ctx.plugin(SubagentControl as any, {})
    await host.ctx.lifecycle.flush()
    const exec = { signal: new AbortController().signal, agent: host.ctx.agents.create({}), toolCallId: 'c' }
    const extra = await host.ctx.tools.view().execute({ name: 'subagent_cancel', input: { handle: 'bg-1', force: true } }, exec)
    expect(extra.isError).to.equal(true)
    expect(extra.content).to.match(/force/)
    const blank = await host.ctx.tools.view().execute({ name: 'subagent_send', input: { handle: 'bg-1', message: '   ' } }, exec)
    expect(blank.content).to.match(/only whitespace/)
  })
})
