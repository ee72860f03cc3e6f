/// <reference types="mocha" />
// Issue 38, item 8, over ACP through the real service: an escalated permission request unanswered
// for maxParkedMs ends the run at once (subagent/end `timeout`, pending() drops it, the agent is
// reaped), without anyone calling resume. The agent is a fixture subprocess.
import { expect } from 'chai'
import SubagentService, { type SubagentOutcome } from '@cordis-subagents/subagents-service'
import * as AcpProvider from '../src/index.js'
import { assertNoLeftovers, FAST, fixtureArgs, harness, type Harness, reapAll, until } from './helpers.js'

describe('provider-acp through ctx.subagents: maxParkedMs ends a parked run at once', function () {
  this.timeout(60_000)
  let h: Harness

  beforeEach(async () => { h = await harness() })
  afterEach(async () => {
    await h.stop()
    await reapAll()
    assertNoLeftovers()
  })

  it('the question expires: subagent/end (timeout) fires, pending() no longer lists it, the agent process is reaped', async () => {
    const { ctx } = h
    ctx.plugin(SubagentService)
    ctx.plugin(AcpProvider, { ...FAST, command: process.execPath, args: fixtureArgs('ask-permission'), permission: 'escalate', maxParkedMs: 200 })
    await ctx.lifecycle.flush()
    let id = ''
    const ended = new Promise<SubagentOutcome>((resolve) => {
      ctx.on('subagent/end', (info, outcome) => { if (info.runId === id) resolve(outcome) })
    })
    const run = await ctx.subagents.delegate('acp', { prompt: 'Clean up.', parent: ctx.agents.create({}), signal: new AbortController().signal })
    id = run.id
    const first = await run.result
    expect(first.stopReason).to.equal('pending')
    expect(AcpProvider.liveProcessGroups()).to.have.length(1)
    expect(ctx.subagents.pending().map((parked) => parked.runId)).to.deep.equal([run.id])

    const outcome = await ended
    expect(outcome.stopReason).to.equal('timeout')
    expect(outcome.diagnostic).to.match(/^The run waited maxParkedMs \(200 ms\) for an answer to its permission question/)
    expect(run.state).to.equal('ended')
    expect(ctx.subagents.pending()).to.deep.equal([])
    // Reaped without its holder doing anything.
    await until(() => AcpProvider.liveProcessGroups().length === 0, 'the agent process reaped')
    await run.dispose()
  })
})
