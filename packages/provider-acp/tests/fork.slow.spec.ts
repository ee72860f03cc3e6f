/// <reference types="mocha" />
// context: fork over real fixture agents: the parent's completed turns reach the child, natively
// (session/fork of the parent's kept session) where the agent advertises it, else seeded into the
// first prompt; a fork child is cancelled and reaped like any other.
import { mkdtempSync, rmSync, unlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { type Agent, type GenerateRequest, ScriptedModel, type ToolMessage } from '@cordis-subagents/agent'
import SubagentService, { type SubagentRun } from '@cordis-subagents/subagents-service'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import * as AcpProvider from '@cordis-subagents/provider-acp'
import type { AcpProvider as Provider } from '../src/index.js'
import type { AcpRun } from '@cordis-subagents/provider-acp/testing'
import { assertNoLeftovers, FAST, fixtureArgs, fixtureProvider, harness, type Harness, request, until } from './helpers.js'
import { fence } from './seed-fence.js'

interface Answer {
  pid: number
  sid: string
  how: string
  forkedFrom: string | null
  prompt: string
}

describe('provider-acp: a fork child (context: fork)', () => {
  const runs: SubagentRun[] = []
  const providers: Provider[] = []
  let h: Harness
  let state: string

  beforeEach(async () => {
    h = await harness()
    state = mkdtempSync(join(tmpdir(), 'acp-fork-'))
  })

  afterEach(async () => {
    await Promise.all(runs.splice(0).map((run) => run.dispose()))
    await Promise.all(providers.splice(0).map((acp) => acp.stop()))
    await h.stop()
    rmSync(state, { recursive: true, force: true })
    assertNoLeftovers()
  })

  /** A fork provider over the `sessions` fixture advertising `caps` (e.g. `fork,resume`). */
  function provider(caps: string, options: Record<string, unknown> = {}) {
    const created = fixtureProvider('sessions', undefined, {
      context: 'fork', resume: 'per-parent', ...options, env: { ACP_FIXTURE_STATE: state, ACP_FIXTURE_SESSION_CAPS: caps },
    })
    providers.push(created)
    return created
  }

  /** A real parent agent of the harness whose transcript holds `said.length` completed turns (its model answers each). */
  let models = 0
  async function parentWith(...said: string[]): Promise<{ parent: Agent; talk: (text: string) => Promise<void> }> {
    const name = `parent-model-${++models}`
    h.ctx.agents.registerModel(name, new ScriptedModel((request: GenerateRequest) => ({ text: `reply to ${request.messages.at(-1)!.content}` })))
    const parent = h.ctx.agents.create({ model: name })
    const talk = async (text: string) => {
      expect((await parent.run(text)).stopReason).to.equal('completed')
    }
    for (const text of said) await talk(text)
    return { parent, talk }
  }

  let counter = 0
  async function delegate(acp: Provider, parent: Agent, prompt = 'answer') {
    const req = request({ prompt, parent, runId: `fork-${++counter}` })
    const run = await acp.start(req) as AcpRun
    runs.push(run)
    const result = await run.result
    expect(result.stopReason, result.diagnostic).to.equal('completed')
    const statuses = req.updates.filter((update) => update.kind === 'status').map((update) => update.text)
    return { run, statuses, answer: JSON.parse(result.output) as Answer }
  }

  it('an agent that advertises session/fork: the parent\'s kept session is forked (the right source), and only the newer turns are seeded', async () => {
    const acp = provider('fork,resume')
    const { parent, talk } = await parentWith('first turn of the parent')
    const first = await delegate(acp, parent)
    expect(first.answer.how).to.equal('new')
    const { tag } = fence(first.answer.prompt)
    expect(tag).to.match(/^parent-conversation-[0-9a-f]{16}$/)
    expect(first.answer.prompt).to.include(`\n\n<${tag}>\n[user]\n  first turn of the parent\n[assistant]\n  reply to first turn of the parent\n</${tag}>\n\n`)
    expect(first.answer.prompt.endsWith('Your task:\n\nanswer')).to.equal(true)
    await talk('second turn of the parent')
    const second = await delegate(acp, parent)
    expect(second.answer.how).to.equal('fork')
    expect(second.answer.forkedFrom).to.equal(first.answer.sid)
    expect(second.answer.sid).to.not.equal(first.answer.sid)
    expect(second.statuses).to.deep.equal(['forked session'])
    expect(second.answer.prompt).to.match(/^Context: below are the turns the delegating agent's conversation completed since/)
    expect(second.answer.prompt).to.include('second turn of the parent')
    expect(second.answer.prompt).to.not.include('first turn of the parent')
    // The fork is the parent's kept session from then on: a third delegation forks the second's.
    const third = await delegate(acp, parent)
    expect(third.answer.forkedFrom).to.equal(second.answer.sid)
    expect(third.answer.prompt).to.equal('answer')
  })

  it('with reuse, the process that still has the parent\'s kept session open forks it', async () => {
    const acp = provider('fork,resume', { reuse: true })
    const { parent, talk } = await parentWith('turn before')
    const first = await delegate(acp, parent)
    await talk('turn after')
    const second = await delegate(acp, parent)
    expect(second.run.processKind).to.equal('reused')
    expect(second.answer.pid).to.equal(first.answer.pid)
    expect(second.answer).to.deep.include({ how: 'fork', forkedFrom: first.answer.sid })
    expect(second.statuses).to.deep.equal(['reused process', 'forked session'])
  })

  it('a parent without a kept session yet, or with resume off: a new session seeded with every completed turn', async () => {
    const acp = provider('fork,resume', { resume: 'off' })
    const { parent, talk } = await parentWith('one', 'two')
    const first = await delegate(acp, parent)
    await talk('three')
    const second = await delegate(acp, parent)
    for (const { answer } of [first, second]) {
      expect(answer.how).to.equal('new')
      expect(answer.forkedFrom).to.equal(null)
    }
    expect(second.answer.prompt).to.match(/^Context: below is the conversation of the agent that delegated this task to you/)
    for (const text of ['[user]\n  one\n', '[user]\n  two\n', '[user]\n  three\n']) expect(second.answer.prompt).to.include(text)
  })

  it('an agent that does not advertise session/fork: a kept session is continued (session/resume) with the newer turns; none kept, the turns are seeded', async () => {
    const acp = provider('resume,prompts')
    const { parent, talk } = await parentWith('before the first delegation')
    const first = await delegate(acp, parent)
    expect(first.answer.prompt).to.include('before the first delegation')
    await talk('before the second')
    const second = await delegate(acp, parent)
    expect(second.answer.how).to.equal('resume')
    expect(second.answer.sid).to.equal(first.answer.sid)
    expect(second.statuses).to.deep.equal(['resumed session'])
    expect(second.answer.prompt).to.include('before the second')
    expect(second.answer.prompt).to.not.include('before the first delegation')
  })

  it('a kept session the agent cannot fork any more: a new session, seeded with every completed turn', async () => {
    // Each run is a new process, so the fixture finds the source only in its state directory.
    const acp = provider('fork,resume')
    const { parent, talk } = await parentWith('early turn')
    const first = await delegate(acp, parent)
    unlinkSync(join(state, `${first.answer.sid}.json`))
    await talk('later turn')
    const second = await delegate(acp, parent)
    expect(second.answer.how).to.equal('new')
    expect(second.statuses).to.deep.equal(['new session (the earlier one could not be continued)'])
    expect(second.answer.prompt).to.include('early turn')
    expect(second.answer.prompt).to.include('later turn')
  })

  it('a forked child is cancelled and reaped like any other, and a disposed one too', async () => {
    const acp = provider('fork,resume')
    for (const how of ['cancel', 'dispose'] as const) {
      const { parent, talk } = await parentWith('context')
      await delegate(acp, parent)
      await talk('more context')
      const req = request({ prompt: 'wait', parent, runId: `fork-${how}` })
      const run = await acp.start(req) as AcpRun
      runs.push(run)
      await until(() => req.updates.some((update) => update.kind === 'text'), 'the forked child to start working')
      expect(req.updates.filter((update) => update.kind === 'status').map((update) => update.text)).to.deep.equal(['forked session'])
      if (how === 'cancel') run.cancel('the parent changed its mind')
      else await run.dispose()
      const result = await run.result
      expect(result.stopReason, how).to.equal('aborted')
      await run.dispose()
    }
    await acp.reaped()
    assertNoLeftovers()
  })

  it('end to end: a parent\'s fork tool call hands the child its completed turns, never the turn in flight', async () => {
    const { ctx } = h
    ctx.plugin(SubagentService)
    ctx.plugin(AcpProvider, { command: process.execPath, args: fixtureArgs('echo'), ...FAST, name: 'acp_fork', context: 'fork' })
    ctx.plugin(SubagentTool, { provider: 'acp_fork', toolName: 'fork_child' })
    await ctx.lifecycle.flush()
    let childSaw = ''
    ctx.agents.registerModel('delegating', new ScriptedModel([
      { text: 'The build uses port 8080.' },
      ScriptedModel.call('fork_child', { description: 'Change the port', prompt: 'Change the port to 9090.' }),
      (request: GenerateRequest) => {
        const tool = request.messages.filter((message): message is ToolMessage => message.role === 'tool').at(-1)!
        childSaw = JSON.parse(tool.content).prompt
        return { text: 'done' }
      },
    ]))
    const parent = ctx.agents.create({ model: 'delegating' })
    await parent.run('Which port does the build use?')
    expect((await parent.run('Now move it to 9090 with a fork child.')).stopReason).to.equal('completed')
    await parent.dispose()
    expect(childSaw).to.include('[user]\n  Which port does the build use?\n[assistant]\n  The build uses port 8080.\n</parent-conversation-')
    expect(childSaw).to.not.include('Now move it to 9090')
    expect(childSaw.endsWith('Your task:\n\nChange the port to 9090.')).to.equal(true)
  })
})
