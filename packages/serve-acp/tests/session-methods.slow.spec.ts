// session/list, session/close and session/resume of the served app, driven by the ACP SDK's client
// over the bin's stdio: what the server advertises, what each method answers, and how they meet
// the store (a closed session stays resumable; a resumed one continues without a replay).
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'chai'
import { appYml, build, newSession, prompt, refusal, said, sdk, Workspace } from './helpers.js'

describe('serve-acp: session/list, session/close, session/resume', function () {
  this.timeout(60_000)
  let ws: Workspace

  before(() => build())
  beforeEach(() => { ws = new Workspace() })
  afterEach(() => ws.dispose())

  const list = (served: Awaited<ReturnType<Workspace['serve']>>, params: { cwd?: string; cursor?: string } = {}) =>
    served.connection.agent.request(sdk.methods.agent.session.list, params) as Promise<sdk.ListSessionsResponse>

  it('advertises list, close and resume, and list shows open and stored sessions, newest first, filtered by cwd', async () => {
    const served = await ws.serve(appYml({ serve: `store: ${JSON.stringify(ws.store)}` }))
    expect(served.init.agentCapabilities.sessionCapabilities).to.deep.equal({ list: {}, close: {}, resume: {} })
    const other = join(ws.dir, 'other')
    mkdirSync(other)
    const first = await newSession(served, ws.dir)
    const second = await newSession(served, other)
    // An enforced pause, so the first session's turn ends in a later millisecond than the second's opening.
    await new Promise((resolve) => setTimeout(resolve, 20))
    await prompt(served, first.sessionId, 'hello')
    const all = await list(served)
    expect(all.sessions.map((s) => s.sessionId)).to.deep.equal([first.sessionId, second.sessionId])
    expect(all.nextCursor ?? undefined).to.equal(undefined)
    for (const entry of all.sessions) expect(Date.parse(entry.updatedAt!)).to.be.a('number').and.not.NaN
    const filtered = await list(served, { cwd: other })
    expect(filtered.sessions).to.have.length(1)
    expect(filtered.sessions[0]).to.include({ sessionId: second.sessionId, cwd: other })
    const bad = await refusal(list(served, { cursor: 'not-ours' }))
    expect((bad.data as { code?: string }).code).to.equal('INVALID_CURSOR')
  })

  it('close frees the session (a prompt is refused) and a later process lists and resumes it without a replay', async () => {
    const yml = appYml({ serve: `store: ${JSON.stringify(ws.store)}` })
    const served = await ws.serve(yml)
    const { sessionId } = await newSession(served, ws.dir)
    await prompt(served, sessionId, 'first words')
    expect(await served.connection.agent.request(sdk.methods.agent.session.close, { sessionId })).to.deep.equal({})
    const gone = await refusal(prompt(served, sessionId, 'history?'))
    expect((gone.data as { code?: string }).code).to.equal('UNKNOWN_SESSION')
    const again = await refusal(served.connection.agent.request(sdk.methods.agent.session.close, { sessionId }))
    expect((again.data as { code?: string }).code).to.equal('UNKNOWN_SESSION')
    await served.close()

    const later = await ws.serve(yml)
    expect((await list(later)).sessions.map((s) => s.sessionId)).to.deep.equal([sessionId])
    const before = later.updates.length
    const resumed = await later.connection.agent.request(sdk.methods.agent.session.resume, { sessionId, cwd: ws.dir, mcpServers: [] })
    expect(resumed).to.deep.equal({})
    // Resume does not replay: nothing arrived for the session before its next prompt.
    expect(later.updates.slice(before).filter((u) => u.sessionId === sessionId)).to.deep.equal([])
    await prompt(later, sessionId, 'history?')
    expect(said(later, sessionId)).to.equal('user messages: 2')
  })

  it('two resumes of one session at once: one opens it, the other is refused (TURN_RUNNING); close then ends the one session', async () => {
    const served = await ws.serve(appYml({ serve: `store: ${JSON.stringify(ws.store)}` }))
    const { sessionId } = await newSession(served, ws.dir)
    await prompt(served, sessionId, 'first words')
    for (let round = 0; round < 5; round++) {
      const resume = () => served.connection.agent.request(sdk.methods.agent.session.resume, { sessionId, cwd: ws.dir, mcpServers: [] })
      const outcomes = await Promise.allSettled([resume(), resume()])
      const refused = outcomes.filter((outcome) => outcome.status === 'rejected') as PromiseRejectedResult[]
      expect(refused, `round ${round}`).to.have.length(1)
      expect(refused[0].reason.data).to.deep.include({ code: 'TURN_RUNNING' })
      expect(refused[0].reason.message).to.include('is being loaded by another request')
      await prompt(served, sessionId, 'history?')
      expect(said(served, sessionId).endsWith(`user messages: ${round + 2}`), said(served, sessionId)).to.equal(true)
      expect(await served.connection.agent.request(sdk.methods.agent.session.close, { sessionId })).to.deep.equal({})
    }
  })

  it('close ends a running turn: its prompt answers cancelled', async () => {
    const served = await ws.serve(appYml({ serve: `store: ${JSON.stringify(ws.store)}`, parts: 'delayMs: 60000' }))
    const { sessionId } = await newSession(served, ws.dir)
    const running = prompt(served, sessionId, 'slow never')
    // Requests are handled in stream order, and a turn claims its session before its first await: this one is refused.
    const busy = await refusal(prompt(served, sessionId, 'again'))
    expect((busy.data as { code?: string }).code).to.equal('TURN_RUNNING')
    await served.connection.agent.request(sdk.methods.agent.session.close, { sessionId })
    expect((await running).stopReason).to.equal('cancelled')
  })

  it('without a store, resume is not advertised and is refused LOAD_UNSUPPORTED', async () => {
    const served = await ws.serve(appYml({ serve: 'loadSession: false' }))
    expect(served.init.agentCapabilities.sessionCapabilities).to.deep.equal({ list: {}, close: {} })
    const { sessionId } = await newSession(served, ws.dir)
    expect((await list(served)).sessions.map((s) => s.sessionId)).to.deep.equal([sessionId])
    const resume = served.connection.agent.request(sdk.methods.agent.session.resume, { sessionId, cwd: ws.dir, mcpServers: [] })
    const error = await refusal(resume)
    expect((error.data as { code?: string }).code).to.equal('LOAD_UNSUPPORTED')
  })
})
