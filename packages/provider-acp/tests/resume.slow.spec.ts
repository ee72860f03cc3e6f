/// <reference types="mocha" />
import { mkdtempSync, rmSync, unlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import type { Agent } from '@cordis-subagents/agent'
import type { SubagentRun } from '@cordis-subagents/subagents-service'
import type { AcpProvider } from '../src/index.js'
import type { AcpRun } from '@cordis-subagents/provider-acp/testing'
import { assertNoLeftovers, fakeParent, fixtureProvider, isAlive, request } from './helpers.js'

interface Answer {
  pid: number
  sid: string
  turn: number
}

describe('provider-acp: resume a parent\'s child session (session/load)', () => {
  const runs: SubagentRun[] = []
  const providers: AcpProvider[] = []
  let state: string

  beforeEach(() => {
    state = mkdtempSync(join(tmpdir(), 'acp-resume-'))
  })

  afterEach(async () => {
    await Promise.all(runs.splice(0).map((run) => run.dispose()))
    await Promise.all(providers.splice(0).map((acp) => acp.stop()))
    rmSync(state, { recursive: true, force: true })
    assertNoLeftovers()
  })

  function provider(options: Record<string, unknown>, arg?: string) {
    const created = fixtureProvider('sessions', arg, { ...options, env: { ACP_FIXTURE_STATE: state } })
    providers.push(created)
    return created
  }

  let counter = 0
  async function start(acp: AcpProvider, parent: Agent, overrides: Record<string, unknown> = {}, prompt = 'answer') {
    const req = request({ prompt, parent, runId: `resume-${++counter}`, ...overrides })
    const run = await acp.start(req) as AcpRun
    runs.push(run)
    return { run, updates: req.updates }
  }

  async function answer(acp: AcpProvider, parent: Agent, overrides: Record<string, unknown> = {}) {
    const { run, updates } = await start(acp, parent, overrides)
    const result = await run.result
    expect(result.stopReason, result.diagnostic).to.equal('completed')
    await run.dispose()
    const statuses = updates.filter((update) => update.kind === 'status').map((update) => update.text)
    return { run, statuses, output: result.output, answer: JSON.parse(result.output) as Answer }
  }

  it('per-parent: a parent\'s second delegation continues its child session in a new process, without the replayed history', async () => {
    const acp = provider({ resume: 'per-parent' })
    const parent = fakeParent()
    const first = await answer(acp, parent)
    expect(first.answer.turn).to.equal(1)
    const second = await answer(acp, parent)
    expect(second.answer.sid).to.equal(first.answer.sid)
    expect(second.run.childId).to.equal(first.run.childId)
    expect(second.answer.pid).to.not.equal(first.answer.pid)
    expect(second.answer.turn).to.equal(2)
    expect(second.output).to.not.include('replayed history')
    expect(second.statuses).to.deep.equal(['resumed session'])
  })

  it('sessions are kept per parent: another parent gets its own', async () => {
    const acp = provider({ resume: 'per-parent' })
    const a = fakeParent()
    const b = { ...fakeParent(), id: 'parent-2' } as Agent
    const first = await answer(acp, a)
    const other = await answer(acp, b)
    expect(other.answer.sid).to.not.equal(first.answer.sid)
    expect(other.answer.turn).to.equal(1)
    expect((await answer(acp, a)).answer.sid).to.equal(first.answer.sid)
  })

  it('request: only a request with resume: true continues; off never does', async () => {
    const acp = provider({ resume: 'request' })
    const parent = fakeParent()
    const first = await answer(acp, parent, { resume: true })
    const plain = await answer(acp, parent)
    expect(plain.answer.sid).to.not.equal(first.answer.sid)
    const asked = await answer(acp, parent, { resume: true })
    expect(asked.answer.sid).to.equal(first.answer.sid)
    expect(asked.answer.turn).to.equal(2)
    const off = provider({})
    const once = await answer(off, parent, { resume: true })
    expect((await answer(off, parent, { resume: true })).answer.sid).to.not.equal(once.answer.sid)
  })

  it('an agent without loadSession: every delegation opens a new session (none is kept to resume)', async () => {
    const acp = provider({ resume: 'per-parent' }, 'single')
    const parent = fakeParent()
    const first = await answer(acp, parent)
    const second = await answer(acp, parent)
    expect(second.answer.sid).to.not.equal(first.answer.sid)
    expect(second.answer.turn).to.equal(1)
    expect(second.statuses).to.deep.equal([])
  })

  it('a session the agent cannot load any more: a new session instead, which is kept from then on', async () => {
    const acp = provider({ resume: 'per-parent' })
    const parent = fakeParent()
    const first = await answer(acp, parent)
    unlinkSync(join(state, `${first.answer.sid}.json`))
    const second = await answer(acp, parent)
    expect(second.answer.sid).to.not.equal(first.answer.sid)
    expect(second.statuses).to.deep.equal(['new session (the earlier one could not be continued)'])
    expect((await answer(acp, parent)).answer.sid).to.equal(second.answer.sid)
  })

  it('with reuse, the process that still has the session open continues it', async () => {
    const acp = provider({ resume: 'per-parent', reuse: true })
    const parent = fakeParent()
    const first = await answer(acp, parent)
    const second = await answer(acp, parent)
    expect(second.run.processKind).to.equal('reused')
    expect(second.answer.pid).to.equal(first.answer.pid)
    expect(second.answer.sid).to.equal(first.answer.sid)
    expect(second.answer.turn).to.equal(2)
    expect(second.statuses).to.deep.equal(['reused process', 'resumed session'])
  })

  it('with reuse, a session continued in another process retires the process holding the older copy', async () => {
    const acp = provider({ resume: 'per-parent', reuse: true })
    const parent = fakeParent()
    const other = { ...fakeParent(), id: 'parent-2' } as Agent
    const first = await answer(acp, parent)
    // Another parent's run holds the process that has the session open ...
    const { run: busy } = await start(acp, other, {}, 'pause')
    expect(busy.pid).to.equal(first.answer.pid)
    // ... so the session is loaded in a new process, and the older copy must never be continued.
    const second = await answer(acp, parent)
    expect(second.answer.pid).to.not.equal(first.answer.pid)
    expect(second.answer.turn).to.equal(2)
    // The busy run ends cleanly, yet its process is not kept: it holds the out-of-date copy.
    expect((await busy.result).stopReason).to.equal('completed')
    await busy.dispose()
    await acp.reaped()
    expect(isAlive(first.answer.pid)).to.equal(false)
    const third = await answer(acp, parent)
    expect(third.answer.pid).to.equal(second.answer.pid)
    expect(third.answer.turn).to.equal(3)
  })

  it('a disposed parent\'s session is dropped; a concurrent second delegation of one parent gets its own session', async () => {
    const acp = provider({ resume: 'per-parent' })
    const parent = { ...fakeParent(), disposed: false } as Agent & { disposed: boolean }
    const first = await answer(acp, parent)
    const { run: busy } = await start(acp, parent, {}, 'wait')
    expect(busy.childId).to.equal(first.run.childId)
    const concurrent = await answer(acp, parent)
    expect(concurrent.answer.sid).to.not.equal(first.answer.sid)
    busy.cancel()
    await busy.dispose()
    parent.disposed = true
    const after = await answer(acp, parent)
    expect(after.answer.sid).to.not.equal(first.answer.sid)
    expect(after.answer.turn).to.equal(1)
  })
})
