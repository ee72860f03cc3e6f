// serve-acp with an agent whose turn parks on a question (a tool that suspends): the prompt turn
// ends end_turn with the question as its message and in `_meta.cordisSubagents.question`; the next
// prompt in the session is the answer (agent.resume). Through the bin, driven by an ACP client.
import { expect } from 'chai'
import { QUESTION_KEY, questionFromMeta } from '@cordis-subagents/shared'
import { appYml, build, newSession, prompt, refusal, said, sdk, Workspace } from './helpers.js'

describe('serve-acp: a turn that parks on a question', function () {
  this.timeout(60_000)
  let ws: Workspace

  before(() => build())
  beforeEach(() => { ws = new Workspace() })
  afterEach(() => ws.dispose())

  const serveConfig = (extra = '') => `store: ${JSON.stringify(ws.store)}${extra ? `\n${extra}` : ''}`

  it('ends the turn with the question (message text and _meta); the next prompt answers it and the turn goes on', async () => {
    const served = await ws.serve(appYml({ serve: serveConfig() }))
    const { sessionId } = await newSession(served, ws.dir)
    const parked = await prompt(served, sessionId, 'ask Which branch should I merge?')
    expect(parked.stopReason).to.equal('end_turn')
    const question = questionFromMeta(parked._meta)!
    expect(question).to.deep.include({ kind: 'ask', text: 'Which branch should I merge?', path: [] })
    expect(question.id).to.match(/^q-/)
    expect(Object.keys((parked._meta as any).cordisSubagents)).to.deep.equal([QUESTION_KEY])
    expect(said(served, sessionId)).to.equal('Which branch should I merge?')
    // One model call so far (10 + 5 tokens).
    expect((parked as { usage?: unknown }).usage).to.deep.equal({ totalTokens: 15, inputTokens: 10, outputTokens: 5 })

    const answered = await prompt(served, sessionId, 'main')
    expect(answered.stopReason).to.equal('end_turn')
    expect(answered._meta ?? undefined).to.equal(undefined)
    expect(said(served, sessionId)).to.equal('Which branch should I merge?told: main')
    // The resumed turn grows the session's usage: two model calls in all.
    expect((answered as { usage?: unknown }).usage).to.deep.equal({ totalTokens: 30, inputTokens: 20, outputTokens: 10 })
    // The session is an ordinary one again.
    expect((await prompt(served, sessionId, 'echo again')).stopReason).to.equal('end_turn')
    expect(said(served, sessionId)).to.match(/echoed: again$/)
  })

  it('session/cancel while parked leaves the question open; a refused answer is INVALID_ANSWER; a parked session is not closed to make room', async () => {
    const served = await ws.serve(appYml({ serve: serveConfig('maxSessions: 1') }))
    const { sessionId } = await newSession(served, ws.dir)
    await prompt(served, sessionId, 'ask Proceed?')
    await served.connection.agent.notify(sdk.methods.agent.session.cancel, { sessionId })
    const full = await refusal(newSession(served, ws.dir))
    expect((full.data as any).code).to.equal('TOO_MANY_SESSIONS')
    expect(full.message).to.include('waiting for an answer')
    // An answer the agent refuses (blank) is INVALID_ANSWER, and the session stays parked.
    const blank = await refusal(prompt(served, sessionId, '   '))
    expect((blank.data as any).code).to.equal('INVALID_ANSWER')
    expect(blank.message).to.include('waiting for an answer')
    await prompt(served, sessionId, 'yes')
    expect(said(served, sessionId)).to.equal('Proceed?told: yes')
    // Answered: the session is idle, and makes room for a new one.
    expect((await newSession(served, ws.dir)).sessionId).to.be.a('string')
  })
})
