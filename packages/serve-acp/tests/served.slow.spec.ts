// serve-acp over a real subprocess started through its bin, driven by the ACP SDK's client side:
// the answer and tool calls, spend reports while a turn runs, cancel, one turn at a time, load
// (also of a session with no finished turn), loadSession off, bounded sessions.
import { expect } from 'chai'
import { appYml, build, newSession, prompt, refusal, said, sdk, Workspace } from './helpers.js'

describe('serve-acp through its bin, driven by an ACP client', function () {
  this.timeout(60_000)
  let ws: Workspace

  before(() => build())
  beforeEach(() => { ws = new Workspace() })
  afterEach(() => ws.dispose())

  const serveConfig = (extra = '') => `persona: "served at depth {depth}"\nstore: ${JSON.stringify(ws.store)}${extra ? `\n${extra}` : ''}`

  it('initialize names the agent; a prompt gets the answer, tool call updates and ACP usage', async () => {
    const served = await ws.serve(appYml({ serve: serveConfig('name: my-agent\ntitle: My Agent') }))
    expect(served.init.agentInfo).to.deep.equal({ name: 'my-agent', title: 'My Agent', version: '0.1.0' })
    expect(served.init.agentCapabilities.loadSession).to.equal(true)
    const { sessionId } = await newSession(served, ws.dir)
    const response = await prompt(served, sessionId, 'echo hello there')
    expect(response.stopReason).to.equal('end_turn')
    expect(said(served, sessionId)).to.equal('echoed: hello there')
    const kinds = served.updates.filter((u) => u.sessionId === sessionId).map((u) => u.update.sessionUpdate)
    expect(kinds).to.include.members(['tool_call', 'tool_call_update', 'usage_update'])
    // Two model calls of 10 input and 5 output tokens.
    expect((response as { usage?: unknown }).usage).to.deep.equal({ totalTokens: 30, inputTokens: 20, outputTokens: 10 })
    expect(await served.close()).to.equal(0)
  })

  it('reports spend (steps, tool calls, tokens) in usage_update _meta while the turn runs', async () => {
    const served = await ws.serve(appYml({ serve: serveConfig('contextWindow: 8000'), parts: 'delayMs: 150' }))
    const { sessionId } = await newSession(served, ws.dir)
    let settled = false
    const turn = prompt(served, sessionId, 'loop')
    turn.then(() => { settled = true }, () => { settled = true })
    const reports = () => served.updates.filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === 'usage_update')
    const deadline = Date.now() + 20_000
    while (reports().filter((u) => u.update._meta.cordisSubagents.work.steps >= 2).length === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    // A report of the second step arrived while the turn still ran (it loops until cancelled).
    expect(settled).to.equal(false)
    const seen = reports().map((u) => u.update)
    const last = seen.at(-1)
    expect(last.size).to.equal(8000)
    expect(last.used).to.equal(15)
    const spend = last._meta.cordisSubagents
    expect(spend.work.steps).to.be.at.least(2)
    expect(spend.work.toolCalls).to.be.at.least(1)
    expect(spend.work.delegations).to.equal(0)
    // A step is charged when the model call starts, its tokens when it answers: the last may still be out.
    expect(spend.tokens).to.be.within(15 * (spend.work.steps - 1), 15 * spend.work.steps)
    expect(spend.tokens % 15).to.equal(0)
    expect(spend.usage.inputTokens).to.equal(2 * spend.usage.outputTokens)
    // Cumulative figures never go down.
    const steps = seen.map((u) => u._meta.cordisSubagents.work.steps)
    expect(steps).to.deep.equal([...steps].sort((a, b) => a - b))
    await served.connection.agent.notify(sdk.methods.agent.session.cancel, { sessionId })
    expect((await turn).stopReason).to.equal('cancelled')
  })

  it('a second prompt while a turn runs is refused; session/cancel still cancels the first', async () => {
    const served = await ws.serve(appYml({ serve: serveConfig() }))
    const { sessionId } = await newSession(served, ws.dir)
    const first = prompt(served, sessionId, 'slow never')
    first.catch(() => {})
    const error = await refusal(prompt(served, sessionId, 'and another thing'))
    expect(error.message).to.include('a turn is already running')
    expect((error.data as any).code).to.equal('TURN_RUNNING')
    await served.connection.agent.notify(sdk.methods.agent.session.cancel, { sessionId })
    expect((await first).stopReason).to.equal('cancelled')
    // The session takes the next prompt.
    expect((await prompt(served, sessionId, 'hi')).stopReason).to.equal('end_turn')
  })

  it('a prompt whose tracer throws fails, and the session is not left running a turn: the next prompt is answered', async () => {
    const served = await ws.serve(appYml({ serve: serveConfig(), parts: 'delayMs: 0\ntracerThrowsOnce: true' }))
    const { sessionId } = await newSession(served, ws.dir)
    const error = await refusal(prompt(served, sessionId, 'traced'))
    expect(error.data).to.deep.equal({ details: 'the tracer broke' })
    expect((await prompt(served, sessionId, 'hi')).stopReason).to.equal('end_turn')
    expect(said(served, sessionId)).to.equal('you said: hi')
  })

  it('session/load continues a session in a new process with its history replayed, also one with no finished turn', async () => {
    const first = await ws.serve(appYml({ serve: serveConfig() }))
    const { sessionId } = await newSession(first, ws.dir)
    await prompt(first, sessionId, 'remember me')
    const { sessionId: untouched } = await newSession(first, ws.dir)
    expect(await first.close()).to.equal(0)

    const second = await ws.serve(appYml({ serve: serveConfig() }))
    await second.connection.agent.request(sdk.methods.agent.session.load, { sessionId, cwd: ws.dir, mcpServers: [] })
    const replay = second.updates.filter((u) => u.sessionId === sessionId).map((u) => `${u.update.sessionUpdate}:${u.update.content?.text}`)
    expect(replay).to.deep.equal(['user_message_chunk:remember me', 'agent_message_chunk:you said: remember me'])
    await prompt(second, sessionId, 'history?')
    expect(said(second, sessionId)).to.include('user messages: 2')

    // A session whose first turn never ran is stored at session/new, so it loads (issue 27, item 4).
    await second.connection.agent.request(sdk.methods.agent.session.load, { sessionId: untouched, cwd: ws.dir, mcpServers: [] })
    await prompt(second, untouched, 'history?')
    expect(said(second, untouched)).to.equal('user messages: 1')

    for (const bad of ['../../etc/passwd', 'session-1-00000000-0000-0000-0000-000000000000']) {
      const load = second.connection.agent.request(sdk.methods.agent.session.load, { sessionId: bad, cwd: ws.dir, mcpServers: [] })
      const error = await refusal(load)
      expect((error.data as any).code, bad).to.be.oneOf(['UNKNOWN_SESSION', 'SESSION_NOT_STORED'])
    }
  })

  it('loadSession off: not advertised, session/load refused, nothing stored', async () => {
    const served = await ws.serve(appYml({ serve: serveConfig('loadSession: false') }))
    expect(served.init.agentCapabilities.loadSession).to.equal(false)
    const { sessionId } = await newSession(served, ws.dir)
    await prompt(served, sessionId, 'hi')
    const error = await refusal(served.connection.agent.request(sdk.methods.agent.session.load, { sessionId, cwd: ws.dir, mcpServers: [] }))
    expect((error.data as any).code).to.equal('LOAD_UNSUPPORTED')
    const { existsSync } = await import('node:fs')
    expect(existsSync(ws.store)).to.equal(false)
  })

  it('a relative or missing cwd is refused; maxSessions closes the least recently used idle session and refuses when all are busy', async () => {
    const served = await ws.serve(appYml({ serve: serveConfig('maxSessions: 2') }))
    for (const cwd of ['relative/dir', `${ws.dir}/missing`]) {
      expect(((await refusal(newSession(served, cwd))).data as any).code, cwd).to.equal('INVALID_CWD')
    }
    const a = (await newSession(served, ws.dir)).sessionId
    const b = (await newSession(served, ws.dir)).sessionId
    const busyA = prompt(served, a, 'slow a')
    const busyB = prompt(served, b, 'slow b')
    busyA.catch(() => {})
    busyB.catch(() => {})
    const full = await refusal(newSession(served, ws.dir))
    expect((full.data as any).code).to.equal('TOO_MANY_SESSIONS')
    await served.connection.agent.notify(sdk.methods.agent.session.cancel, { sessionId: a })
    expect((await busyA).stopReason).to.equal('cancelled')
    const c = (await newSession(served, ws.dir)).sessionId
    // `a` was closed to make room: a prompt to it is refused until it is loaded again.
    expect(((await refusal(prompt(served, a, 'hi'))).data as any).code).to.equal('UNKNOWN_SESSION')
    // Loading needs a slot too: b is busy, so the idle c is closed for it.
    await served.connection.agent.request(sdk.methods.agent.session.load, { sessionId: a, cwd: ws.dir, mcpServers: [] })
    expect(((await refusal(prompt(served, c, 'hi'))).data as any).code).to.equal('UNKNOWN_SESSION')
    expect((await prompt(served, a, 'hi')).stopReason).to.equal('end_turn')
    await served.connection.agent.notify(sdk.methods.agent.session.cancel, { sessionId: b })
    expect((await busyB).stopReason).to.equal('cancelled')
  })

  it('the configured model is the sessions\' model: an unknown one fails the turn with the runtime\'s message', async () => {
    const served = await ws.serve(appYml({ serve: serveConfig('model: nosuch') }))
    const { sessionId } = await newSession(served, ws.dir)
    const error = await refusal(prompt(served, sessionId, 'hi'))
    expect(error.data).to.deep.equal({ code: 'TURN_FAILED', stopReason: 'error' })
    expect(error.message).to.include('Unknown model "nosuch"')
  })

  it('a prompt longer than maxPromptChars is refused', async () => {
    const served = await ws.serve(appYml({ serve: serveConfig('maxPromptChars: 10') }))
    const { sessionId } = await newSession(served, ws.dir)
    const error = await refusal(prompt(served, sessionId, 'x'.repeat(11)))
    expect((error.data as any).code).to.equal('PROMPT_TOO_LARGE')
  })
})
