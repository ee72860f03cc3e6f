/// <reference types="mocha" />
// The parent's wall-time budget (SUBAGENT_BUDGET's maxWallMs) is counted on the monotonic clock from the session's
// first call: a step of the wall clock neither spends it (forward) nor gives it back (back).
import { expect } from 'chai'
import { eventually, withSteppedClock } from '@cordis-subagents/test-support'
import { ParentBudget } from '../src/parent-budget.js'

describe('serve-mcp: the parent\'s wall-time budget across wall-clock steps', () => {
  it('the wall clock stepping forward 1 h spends none of it', async () => {
    await withSteppedClock((step) => {
      const budget = new ParentBudget({ maxWallMs: 60_000 })
      step(3_600_000)
      expect(budget.breach(), 'no breach').to.equal(undefined)
      expect(budget.remaining()?.maxWallMs).to.be.above(50_000)
    })
  })

  it('the wall clock stepping back 1 h adds nothing to it: it is spent once its time has passed', async () => {
    await withSteppedClock(async (step) => {
      const budget = new ParentBudget({ maxWallMs: 100 })
      step(-3_600_000)
      expect(budget.remaining()?.maxWallMs).to.be.at.most(100)
      const breach = await eventually(() => budget.breach(), 'the wall-time budget is spent')
      expect(breach).to.include({ budget: 'wallMs', limit: 100 })
      expect(breach.spent).to.be.below(3_600_000)
    })
  })
})
