/// <reference types="mocha" />
import { expect } from 'chai'
import { STATUSES, statusOf, STOP_REASONS } from '@cordis-subagents/subagents-service'

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
    })
    expect(statusOf({ stopReason: 'budget', budget: { budget: 'tokens' } })).to.deep.equal({ status: 'incomplete', limit: 'tokens' })
    expect(statusOf({ stopReason: 'something-new' })).to.deep.equal({ status: 'error' })
    for (const { status } of Object.values(table)) expect(STATUSES).to.include(status)
  })
})
