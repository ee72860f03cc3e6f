/// <reference types="mocha" />
import { expect } from 'chai'
import type { ForkScope } from 'cordis'
import AgentDefinitions from '@cordis-subagents/definitions'
import * as Agents from '@cordis-subagents/definitions/agents'
import { asTool } from '@cordis-subagents/subagent-tool'
import { call, caller, FAILED, type Harness, loadProvider, loadTool, parentAgent, ProviderControl, setup, until } from './helpers.js'

const TEAM = {
  agents: {
    writer: { does: 'Writes the final text.', soul: 'You write.', provider: 'fork', model: 'scripted:writer', budget: { maxSteps: 3 } },
    reviewer: { does: 'Reviews a change for bugs.', soul: 'You review.', uses: { allow: ['read_file'] } },
    lead: { does: 'Leads a sub-team.', team: ['writer'] },
    coordinator: { does: 'Plans and delegates.', team: ['writer', 'reviewer', 'lead'] },
  },
}

describe('subagent-tool: team tool (config.agent)', () => {
  let h: Harness
  let spawn: ProviderControl
  let fork: ProviderControl
  let definitions: ForkScope

  beforeEach(async () => {
    h = await setup()
    spawn = new ProviderControl()
    fork = new ProviderControl()
    spawn.onRun = (run) => run.complete(`spawn answer to: ${run.request.prompt}`, { usage: { inputTokens: 10, outputTokens: 5 }, work: { steps: 2, toolCalls: 1, delegations: 0 } })
    fork.onRun = (run) => run.complete(`fork answer to: ${run.request.prompt}`)
    await loadProvider(h.ctx, spawn, { name: 'spawn' })
    await loadProvider(h.ctx, fork, { name: 'fork' })
    h.ctx.plugin(AgentDefinitions)
    await h.ctx.lifecycle.flush()
    definitions = h.ctx.plugin(Agents, TEAM)
    await h.ctx.lifecycle.flush()
  })
  afterEach(async () => { await h.stop() })

  it('the model sees { agent, description, prompt }, agent an enum of the team (sorted), the description composed from their `does`', async () => {
    await loadTool(h.ctx, { agent: 'coordinator', toolName: 'delegate' })
    const tool = h.ctx.tools.view().list().find((listed) => listed.name === 'delegate')!
    const parameters = tool.parameters as { properties: Record<string, { enum?: string[] }>; required: string[] }
    expect(Object.keys(parameters.properties)).to.deep.equal(['agent', 'description', 'prompt'])
    expect(parameters.properties.agent.enum).to.deep.equal(['lead', 'reviewer', 'writer'])
    expect(tool.description).to.include('- lead: Leads a sub-team.\n- reviewer: Reviews a change for bugs.\n- writer: Writes the final text.')
    // Only the root sees it (not nested): a child at depth 1 does not.
    expect(h.ctx.tools.view().forDepth(1).has('delegate')).to.equal(false)
  })

  it('the model picks a member by name; the child runs on that member\'s provider, soul, model and budget', async () => {
    await loadTool(h.ctx, { agent: 'coordinator', toolName: 'delegate' })
    const { agent, model } = parentAgent(h.ctx, [
      { toolCalls: [{ id: 'c1', name: 'delegate', input: { agent: 'writer', description: 'Write it', prompt: 'Write the summary.' } }] },
      { text: 'All done.' },
    ])
    const result = await agent.run('Summarise.', { signal: new AbortController().signal })
    expect(result.text).to.equal('All done.')
    expect(fork.starts).to.have.length(1)
    expect(spawn.starts).to.have.length(0)
    const request = fork.starts[0]
    expect(request).to.include({ prompt: 'Write the summary.', persona: 'You write.' })
    expect(request.agentOptions).to.deep.equal({ model: 'scripted:writer', name: 'writer' })
    // writer has no team: every team tool is hidden from it.
    expect(request.toolFilter).to.deep.equal({ deny: ['delegate'] })
    const toolMessage = model.requests[1].messages.at(-1) as { content: string }
    expect(toolMessage.content).to.equal('fork answer to: Write the summary.')
    await agent.dispose()
  })

  it('a result carries the agent, and `status` beside `stopReason`', async () => {
    await loadTool(h.ctx, { agent: 'coordinator', toolName: 'delegate' })
    const result = await call(h.ctx, { agent: 'reviewer', description: 'Review', prompt: 'Review src/a.ts.' }, { name: 'delegate' })
    expect(result.isError).to.not.equal(true)
    expect(result.metadata).to.deep.include({ agent: 'reviewer', provider: 'spawn', stopReason: 'completed', status: 'done' })
    expect(spawn.starts[0].toolFilter).to.deep.equal({ allow: ['read_file'], deny: ['delegate'] })
  })

  it('talk, called by a caller that is no agent (a plain { id, depth }): the member runs, answers and is disposed; no board is joined', async () => {
    await loadTool(h.ctx, { agent: 'coordinator', toolName: 'crew', talk: true })
    const result = await call(h.ctx, { agent: 'reviewer', description: 'Review', prompt: 'Review src/a.ts.' }, { name: 'crew' })
    expect(result.isError, result.content).to.not.equal(true)
    expect(result.content).to.include('spawn answer to: Review src/a.ts.')
    expect(spawn.starts).to.have.length(1)
    expect(spawn.disposeCalls, 'the member\'s run is disposed').to.equal(1)
    expect(h.ctx.subagents.runs()).to.deep.equal([])
  })

  it('an out-of-team name is refused with the team\'s names listed, and starts nothing', async () => {
    await loadTool(h.ctx, { agent: 'lead', toolName: 'delegate' })
    const result = await call(h.ctx, { agent: 'reviewer', description: 'Review', prompt: 'Review it.' }, { name: 'delegate' })
    expect(result.isError).to.equal(true)
    expect(result.content).to.include('No agent "reviewer" in your team. Your team: writer.')
    expect(spawn.starts.length + fork.starts.length).to.equal(0)
  })

  it('a member with a team keeps the team tool that serves it; the others do not see it', async () => {
    await loadTool(h.ctx, { agent: 'coordinator', toolName: 'delegate' })
    await loadTool(h.ctx, { agent: 'lead', toolName: 'delegate_lead', nested: true })
    await call(h.ctx, { agent: 'lead', description: 'Lead', prompt: 'Lead it.' }, { name: 'delegate' })
    expect(spawn.starts[0].toolFilter).to.deep.equal({ deny: ['delegate'] })
    await call(h.ctx, { agent: 'reviewer', description: 'Review', prompt: 'Review it.' }, { name: 'delegate' })
    expect(spawn.starts[1].toolFilter).to.deep.equal({ allow: ['read_file'], deny: ['delegate', 'delegate_lead'] })
  })

  it('follows the definitions: a reload re-derives names and description; without the agent or a team the tool is absent', async () => {
    await loadTool(h.ctx, { agent: 'coordinator', toolName: 'delegate' })
    definitions.update({ agents: { ...TEAM.agents, coordinator: { does: 'Plans.', team: ['reviewer'] } } })
    await h.ctx.lifecycle.flush()
    const tool = h.ctx.tools.view().list().find((listed) => listed.name === 'delegate')!
    expect((tool.parameters as { properties: { agent: { enum: string[] } } }).properties.agent.enum).to.deep.equal(['reviewer'])
    definitions.update({ agents: { ...TEAM.agents, coordinator: { does: 'Plans.' } } })
    await h.ctx.lifecycle.flush()
    expect(h.ctx.tools.view().has('delegate')).to.equal(false)
    definitions.dispose()
    expect(h.ctx.tools.view().has('delegate')).to.equal(false)
    h.ctx.plugin(Agents, TEAM)
    await h.ctx.lifecycle.flush()
    expect(h.ctx.tools.view().has('delegate')).to.equal(true)
  })

  it('escalate: a member\'s question suspends the call; its continuation still names the member and its provider', async () => {
    spawn.onRun = undefined
    spawn.parkable = true
    await loadTool(h.ctx, { agent: 'coordinator', toolName: 'delegate', questions: 'escalate' })
    const parent = h.ctx.agents.create({ label: 'parent' })
    const input = { agent: 'reviewer', description: 'Review', prompt: 'Review it.' }
    const pending = call(h.ctx, input, { name: 'delegate', agent: parent })
    await until(() => spawn.runs.length > 0)
    spawn.last.ask('Which file?')
    const suspended = await pending
    expect(suspended.suspend!.state).to.deep.equal({ runId: spawn.last.request.runId, agent: 'reviewer', provider: 'spawn' })
    const resumed = h.ctx.tools.view().resume({ name: 'delegate', input }, 'a.ts', suspended.suspend!,
      { signal: new AbortController().signal, agent: parent, toolCallId: 'c1' })
    await until(() => spawn.last.answers.length === 1)
    spawn.last.complete('a.ts is fine')
    const result = await resumed
    expect(result.content).to.equal('a.ts is fine')
    expect(result.metadata).to.deep.include({ agent: 'reviewer', provider: 'spawn', status: 'done' })
    await parent.dispose()
  })

  it('another entry\'s reload that does not change the team leaves the tool registered as it was', async () => {
    await loadTool(h.ctx, { agent: 'coordinator', toolName: 'delegate' })
    const changes: string[] = []
    h.ctx.on('tools/changed', (name, change) => { changes.push(`${name}:${change}`) })
    const other = h.ctx.plugin(Agents, { agents: { outsider: { does: 'Not in any team.' } } })
    await h.ctx.lifecycle.flush()
    other.dispose()
    expect(changes).to.deep.equal([])
    definitions.update({ agents: { ...TEAM.agents, reviewer: { does: 'Reviews carefully.' } } })
    await h.ctx.lifecycle.flush()
    expect(changes).to.deep.equal(['delegate:removed', 'delegate:added'])
  })

  it('refuses provider, persona or toolFilter beside agent, and mode background, at load', async () => {
    for (const extra of [{ provider: 'spawn' }, { persona: 'x' }, { toolFilter: { deny: ['x'] } }, { mode: 'background' }]) {
      const loaded = await loadTool(h.ctx, { agent: 'coordinator', toolName: 'delegate', ...extra })
      expect(loaded.status, JSON.stringify(extra)).to.equal(FAILED)
    }
    const neither = await loadTool(h.ctx, { toolName: 'delegate' })
    expect(neither.status).to.equal(FAILED)
  })

  it('asTool(): an agent as a tool; one result, the final text plus { agent, turns, totalTokens }', async () => {
    const tool = asTool(h.ctx, 'reviewer')
    expect(tool.name).to.equal('reviewer')
    expect(tool.description).to.equal('Reviews a change for bugs.')
    h.ctx.tools.register(tool)
    const result = await h.ctx.tools.view().execute({ name: 'reviewer', input: { prompt: 'Review b.ts.' } }, {
      signal: new AbortController().signal, agent: caller(), toolCallId: 't1',
    })
    expect(result.content).to.equal('spawn answer to: Review b.ts.')
    expect(result.metadata).to.deep.equal({ agent: 'reviewer', turns: 2, totalTokens: 15, status: 'done', stopReason: 'completed' })
    expect(result.usage).to.deep.include({ inputTokens: 10, outputTokens: 5 })
    expect(spawn.starts[0]).to.include({ persona: 'You review.' })
    expect(() => asTool(h.ctx, 'ghost')).to.throw('agent "ghost" is not defined')
  })
})

describe('subagent-tool: team tool follows ctx.agentDefinitions in any load order', () => {
  let h: Harness

  beforeEach(async () => {
    h = await setup()
    const spawn = new ProviderControl()
    spawn.onRun = (run) => run.complete(`spawn answer to: ${run.request.prompt}`)
    await loadProvider(h.ctx, spawn, { name: 'spawn' })
  })
  afterEach(async () => { await h.stop() })

  const listed = () => h.ctx.tools.view().has('delegate')

  it('loaded before the definitions plugin: absent, mounted once it and the team arrive, gone while it is unloaded', async () => {
    await loadTool(h.ctx, { agent: 'coordinator', toolName: 'delegate' })
    expect(listed(), 'no definitions service yet').to.equal(false)
    const service = h.ctx.plugin(AgentDefinitions)
    h.ctx.plugin(Agents, TEAM)
    await h.ctx.lifecycle.flush()
    expect(listed(), 'the service and the team are here').to.equal(true)
    const result = await call(h.ctx, { agent: 'reviewer', description: 'Review', prompt: 'Review it.' }, { name: 'delegate' })
    expect(result.content).to.equal('spawn answer to: Review it.')

    service.dispose()
    await h.ctx.lifecycle.flush()
    expect(listed(), 'the service was unloaded').to.equal(false)
    const again = h.ctx.plugin(AgentDefinitions)
    h.ctx.plugin(Agents, TEAM)
    await h.ctx.lifecycle.flush()
    expect(listed(), 'the service is back').to.equal(true)
    again.dispose()
  })
})
