/// <reference types="mocha" />
// An agent's elicitation/create (stable in ACP v1) in form mode, against the fixture agent (a real
// subprocess): with permission: escalate it parks the run with a question listing the fields, and
// resume(answer) sends the values back (a JSON object, or decline); an answer missing a required field
// is refused and the question is asked again. Without escalate the capability is not offered and a request
// is declined.
import { expect } from 'chai'
import type { SubagentRun } from '@cordis-subagents/subagents-service'
import type { AcpRun } from '@cordis-subagents/provider-acp/testing'
import { assertNoLeftovers, fixtureProvider, reapAll, request } from './helpers.js'

describe('provider-acp: an agent\'s elicitation becomes a question', () => {
  const runs: SubagentRun[] = []

  async function start(options = {}) {
    const req = request()
    const run = await fixtureProvider('elicit', undefined, options).start(req) as AcpRun
    runs.push(run)
    return { run, updates: req.updates }
  }

  afterEach(async () => {
    await Promise.all(runs.splice(0).map((run) => run.dispose()))
    await reapAll()
    assertNoLeftovers()
  })

  it('escalate: parks with the form as the question; a JSON answer is sent back as accept with the values', async () => {
    const { run, updates } = await start({ permission: 'escalate' })
    const first = await run.result
    expect(first.stopReason).to.equal('pending')
    expect(first.question).to.deep.include({ kind: 'ask', path: [] })
    expect(first.question!.text).to.include('The agent asks for input: Which branch should I merge?')
      .and.include('- branch (string, required): the branch').and.include('- force (boolean, optional)')
    expect(updates).to.deep.include({ kind: 'status', text: 'input asked (elicitation)' })
    // An answer the form refuses: the question is asked again, the diagnostic says why.
    const again = await run.resume('{"force": true}')
    expect(again.stopReason).to.equal('pending')
    expect(again.diagnostic).to.match(/^\[INVALID_REQUEST\] The form's field branch \(string\) is required\. The question is asked again\./)
    expect(run.question).to.deep.equal(first.question)
    const final = await run.resume('{"branch": "main", "force": "yes"}')
    expect(final.stopReason).to.equal('completed')
    expect(final.output).to.equal('elicited accept {"branch":"main","force":true}')
  })

  it('escalate: decline is sent back as decline', async () => {
    const { run } = await start({ permission: 'escalate' })
    expect((await run.result).stopReason).to.equal('pending')
    const final = await run.resume('decline')
    expect(final.output).to.equal('elicited decline null')
  })

  it('without escalate the request is declined at once (the run never parks)', async () => {
    const { run } = await start({ permission: 'reject' })
    const final = await run.result
    expect(final.stopReason).to.equal('completed')
    expect(final.output).to.equal('elicited decline null')
  })
})
