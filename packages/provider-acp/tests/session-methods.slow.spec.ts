/// <reference types="mocha" />
// session/close and session/resume against the fixture agent (mode `sessions`, advertising the
// methods named in ACP_FIXTURE_SESSION_CAPS): a reused process closes the session its run ended
// with when the agent offers close, keeps a session a parent continues, and continues one with
// session/resume (no replay) where the agent offers it, else session/load.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import type { Agent } from '@cordis-subagents/agent'
import type { AcpProvider } from '../src/index.js'
import { assertNoLeftovers, fakeParent, fixtureProvider, request } from './helpers.js'

interface Answer {
  pid: number
  sid: string
  turn: number
  how?: string
  closed?: string[]
}

describe('provider-acp: session/close and session/resume where the agent offers them', () => {
  const providers: AcpProvider[] = []
  let state: string

  beforeEach(() => { state = mkdtempSync(join(tmpdir(), 'acp-session-methods-')) })
  afterEach(async () => {
    await Promise.all(providers.splice(0).map((acp) => acp.stop()))
    rmSync(state, { recursive: true, force: true })
    assertNoLeftovers()
  })

  function provider(caps: string, options: Record<string, unknown> = {}) {
    const created = fixtureProvider('sessions', undefined, { ...options, env: { ACP_FIXTURE_STATE: state, ACP_FIXTURE_SESSION_CAPS: caps } })
    providers.push(created)
    return created
  }

  let counter = 0
  async function delegate(acp: AcpProvider, parent: Agent, resume?: boolean) {
    const run = await acp.start(request({ runId: `run-${++counter}`, parent, prompt: 'go', ...resume === undefined ? {} : { resume } }))
    const result = await run.result
    expect(result.stopReason, result.output).to.equal('completed')
    await run.dispose()
    return { answer: JSON.parse(result.output) as Answer, kind: (run as { processKind?: string }).processKind }
  }

  it('reuse: the next run on the process finds the previous run\'s session closed (session/close)', async () => {
    const acp = provider('close', { reuse: true })
    const first = await delegate(acp, fakeParent())
    const second = await delegate(acp, fakeParent())
    expect(second.kind).to.equal('reused')
    expect(second.answer.pid).to.equal(first.answer.pid)
    expect(second.answer.closed).to.deep.equal([first.answer.sid])
  })

  it('reuse with an agent that does not offer close: nothing is closed', async () => {
    const acp = provider('resume', { reuse: true })
    const first = await delegate(acp, fakeParent())
    const second = await delegate(acp, fakeParent())
    expect(second.answer.pid).to.equal(first.answer.pid)
    expect(second.answer.closed).to.deep.equal([])
  })

  it('per-parent resume: the kept session is not closed, and the parent\'s next delegation resumes it (session/resume, no replay)', async () => {
    const acp = provider('close,resume', { reuse: true, resume: 'per-parent' })
    const parent = fakeParent()
    const first = await delegate(acp, parent)
    const second = await delegate(acp, parent)
    expect(second.answer).to.deep.include({ sid: first.answer.sid, turn: 2, how: 'resume', closed: [] })
  })

  it('per-parent resume in a new process: session/resume when offered, session/load when not', async () => {
    for (const [caps, how] of [['resume', 'resume'], ['close', 'load']] as const) {
      const acp = provider(caps, { resume: 'per-parent' })
      const parent = fakeParent()
      const first = await delegate(acp, parent)
      const second = await delegate(acp, parent)
      expect(second.answer.pid, caps).to.not.equal(first.answer.pid)
      expect(second.answer, caps).to.deep.include({ sid: first.answer.sid, turn: 2, how })
      // The load's replay is not this run's output: the answer parsed as the turn's JSON alone.
    }
  })
})
