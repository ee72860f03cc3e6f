/// <reference types="mocha" />
import { expect } from 'chai'
import { type SubagentOutcome, type SubagentResult, STATUSES, statusOf, STOP_REASONS } from '@cordis-subagents/subagents-service'
import { FakeProvider, type Harness, request, setup } from './helpers.js'

describe('subagents-service: statusOf (the teams status vocabulary)', () => {
  it('maps every stop reason into the closed vocabulary; incomplete names the limit', () => {
    const table = Object.fromEntries(STOP_REASONS.map((stopReason) => [stopReason, statusOf({ stopReason })]))
    expect(table).to.deep.equal({
      'completed': { status: 'done' },
      'pending': { status: 'pending' },
      'max-steps': { status: 'incomplete', limit: 'maxSteps' },
      'max-tokens': { status: 'incomplete', limit: 'maxTokens' },
      'budget': { status: 'incomplete' },
      'interrupted': { status: 'interrupted' },
      'closed': { status: 'closed' },
      'aborted': { status: 'closed' },
      'timeout': { status: 'timeout' },
      'error': { status: 'error' },
      'refusal': { status: 'error' },
      'invalid_output': { status: 'error' },
    })
    expect(statusOf({ stopReason: 'budget', budget: { budget: 'tokens' } })).to.deep.equal({ status: 'incomplete', limit: 'tokens' })
    expect(statusOf({ stopReason: 'something-new' })).to.deep.equal({ status: 'error' })
    for (const { status } of Object.values(table)) expect(STATUSES).to.include(status)
  })
})

describe('subagents-service: status (and limit) on every outcome and on subagent/end', () => {
  let h: Harness
  let provider: FakeProvider

  beforeEach(async () => {
    h = await setup()
    provider = new FakeProvider('alpha')
    h.ctx.subagents.register(provider)
  })
  afterEach(async () => { await h.stop() })

  const cases: Array<[string, Partial<SubagentResult> | Record<string, unknown>, Pick<SubagentOutcome, 'stopReason' | 'status' | 'limit'>]> = [
    ['completed', { stopReason: 'completed' }, { stopReason: 'completed', status: 'done' }],
    ['max-steps', { stopReason: 'max-steps', stepLimit: 4 }, { stopReason: 'max-steps', status: 'incomplete', limit: 'maxSteps' }],
    ['a budget, by name', { stopReason: 'budget', budget: { budget: 'tokens', limit: 10, spent: 12 } }, { stopReason: 'budget', status: 'incomplete', limit: 'tokens' }],
    ['aborted (its holder ended it)', { stopReason: 'aborted' }, { stopReason: 'aborted', status: 'closed' }],
    ['timeout', { stopReason: 'timeout' }, { stopReason: 'timeout', status: 'timeout' }],
    ['refusal', { stopReason: 'refusal' }, { stopReason: 'refusal', status: 'error' }],
    ['a malformed result', { stopReason: 'exploded' }, { stopReason: 'error', status: 'error' }],
  ]
  for (const [name, settled, expected] of cases) {
    it(`${name}: run.result and the subagent/end payload carry the same status beside the stop reason`, async () => {
      const ended: SubagentOutcome[] = []
      h.ctx.on('subagent/end', (_info, outcome) => { ended.push(outcome) })
      const run = await h.ctx.subagents.delegate('alpha', request(h.root))
      provider.last.finish(settled)
      const outcome = await run.result
      expect(outcome).to.deep.include(expected)
      if (!expected.limit) expect(outcome).to.not.have.property('limit')
      expect(ended).to.deep.equal([outcome])
      expect(Object.isFrozen(outcome)).to.equal(true)
      await run.dispose()
    })
  }

  it('a run its holder cancels ends `aborted` with status `closed` (a person ended it, not a limit)', async () => {
    const cancelled = await h.ctx.subagents.delegate('alpha', request(h.root))
    cancelled.cancel('no longer needed')
    expect(await cancelled.result).to.deep.include({ stopReason: 'aborted', status: 'closed' })
    await cancelled.dispose()
  })
})
