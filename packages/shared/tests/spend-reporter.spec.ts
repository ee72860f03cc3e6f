// The spend reporter: onSpend fires after every charge; reports are coalesced to one per
// event-loop turn, each the latest cumulative figure, and the last is never dropped.
import { expect } from 'chai'
import type { SpentCounts as BudgetSpend } from '../src/index.js'
import { SpendReporter } from '../src/index.js'

const spend = (steps: number): BudgetSpend => ({ steps, tokens: steps * 15, toolCalls: steps - 1, children: 0 })
const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

describe('the crossing\'s spend reporter (serve-acp, serve-a2a)', () => {
  it('sends one report per event-loop turn, the latest figure', async () => {
    const sent: number[] = []
    const reporter = new SpendReporter(async (spent) => { sent.push(spent.steps) })
    reporter.charge(spend(1))
    reporter.charge(spend(2))
    reporter.charge(spend(3))
    expect(sent).to.deep.equal([])
    await nextTurn()
    expect(sent).to.deep.equal([3])
    reporter.charge(spend(4))
    await nextTurn()
    expect(sent).to.deep.equal([3, 4])
    await reporter.finish()
    expect(sent).to.deep.equal([3, 4])
  })

  it('finish() sends a pending figure at once, never twice, and waits for every send; a failed send is not fatal', async () => {
    const sent: number[] = []
    let fail = true
    const reporter = new SpendReporter(async (spent) => {
      sent.push(spent.steps)
      if (fail) { fail = false; throw new Error('client gone') }
    })
    reporter.charge(spend(1))
    await nextTurn()
    reporter.charge(spend(2))
    expect(reporter.last).to.deep.equal(spend(2))
    await reporter.finish()
    expect(sent).to.deep.equal([1, 2])
    await nextTurn()
    expect(sent).to.deep.equal([1, 2])
  })

  it('discard() drops a pending figure (never sent, even on a later turn or finish) and keeps it as last', async () => {
    const sent: number[] = []
    const reporter = new SpendReporter(async (spent) => { sent.push(spent.steps) })
    reporter.charge(spend(1))
    await nextTurn()
    reporter.charge(spend(2))
    reporter.discard()
    expect(reporter.last).to.deep.equal(spend(2))
    await nextTurn()
    await reporter.finish()
    expect(sent).to.deep.equal([1])
    reporter.discard()
    expect(reporter.last).to.deep.equal(spend(2))
  })

  it('nudge() sends the latest figure on the next turn without a new charge; none before the first charge; discard() drops it', async () => {
    const sent: number[] = []
    const reporter = new SpendReporter(async (spent) => { sent.push(spent.steps) })
    // Before any charge there is no figure: the nudge waits for the first one.
    reporter.nudge()
    await nextTurn()
    expect(sent).to.deep.equal([])
    reporter.charge(spend(1))
    await nextTurn()
    expect(sent).to.deep.equal([1])
    // Nothing charged since: a plain turn sends nothing, a nudged one the same figure again, once.
    await nextTurn()
    expect(sent).to.deep.equal([1])
    reporter.nudge()
    reporter.nudge()
    await nextTurn()
    await nextTurn()
    expect(sent).to.deep.equal([1, 1])
    reporter.nudge()
    reporter.discard()
    await nextTurn()
    await reporter.finish()
    expect(sent).to.deep.equal([1, 1])
  })

  it('a charge is copied: a later change to the caller\'s object does not alter what is sent', async () => {
    const sent: BudgetSpend[] = []
    const reporter = new SpendReporter(async (spent) => { sent.push(spent) })
    const live = spend(1)
    reporter.charge(live)
    live.steps = 99
    await reporter.finish()
    expect(sent).to.deep.equal([spend(1)])
  })
})
