/// <reference types="mocha" />
import { expect } from 'chai'
import { LimitError } from '@cordis-subagents/shared'
import type { Agent, Budget } from '@cordis-subagents/agent'
import type { SubagentHandle } from '@cordis-subagents/subagents-service'
import { type Harness, rejection, request, FakeProvider, setup } from './helpers.js'
import { tick } from '../../../test/support/async.js'

describe('ctx.subagents: tree limits (depth ceiling, delegations, concurrency, usage, limit stops)', () => {
  let h: Harness
  let provider: FakeProvider
  const handles: SubagentHandle[] = []

  async function start(parent: Agent, overrides: Parameters<typeof request>[1] = {}) {
    const handle = await h.ctx.subagents.delegate('alpha', request(parent, overrides))
    handles.push(handle)
    return handle
  }

  /** The child agent an in-process provider would create for the provider call `index`. */
  function childOf(index: number): Agent {
    const call = provider.calls[index]
    return h.ctx.agents.create({ parent: call.parent, budget: call.budget as Budget })
  }

  async function restart(config: Parameters<typeof setup>[0], agents: Parameters<typeof setup>[1] = {}) {
    await h.stop()
    h = await setup(config, agents)
    provider = new FakeProvider('alpha')
    h.ctx.subagents.register(provider)
  }

  beforeEach(async () => {
    h = await setup()
    provider = new FakeProvider('alpha')
    h.ctx.subagents.register(provider)
  })

  afterEach(async () => {
    await Promise.all(handles.splice(0).map((handle) => handle.dispose().catch(() => {})))
    await h.stop()
  })

  describe('maxChildren: delegations of one tree', () => {
    it('exactly maxChildren starts are admitted across the tree; the next is BUDGET_EXCEEDED with the numbers', async () => {
      await restart({ maxChildren: 3 })
      const first = await start(h.root)
      const child = childOf(0)
      await start(child) // a grandchild counts against the same tree
      await start(h.root)
      const error = await rejection(h.ctx.subagents.delegate('alpha', request(child)))
      expect(error).to.include({ code: 'BUDGET_EXCEEDED' })
      expect(error.breach).to.deep.equal({ budget: 'children', limit: 3, spent: 3 })
      expect(error.message).to.include('children budget').and.include('answer with what you have')
      expect(provider.calls).to.have.length(3)
      expect(first.info.depth).to.equal(1)
    })

    it('a root agent\'s own budget can lower it; a start that fails is refunded', async () => {
      const root = h.ctx.agents.create({ label: 'tight', budget: { maxChildren: 1 } })
      provider.startError = new Error('spawn ENOENT')
      await rejection(h.ctx.subagents.delegate('alpha', request(root)))
      provider.startError = undefined
      await start(root)
      const error = await rejection(h.ctx.subagents.delegate('alpha', request(root)))
      expect(error.breach).to.deep.equal({ budget: 'children', limit: 1, spent: 1 })
    })

    it('a parent whose steps, tokens or time are spent cannot delegate', async () => {
      const root = h.ctx.agents.create({ label: 'spent', budget: { maxSteps: 1 } })
      root.budget.charge('steps', 2)
      const error = await rejection(h.ctx.subagents.delegate('alpha', request(root)))
      expect(error).to.include({ code: 'BUDGET_EXCEEDED' })
      expect(error.breach).to.deep.equal({ budget: 'steps', limit: 1, spent: 2 })
      expect(provider.calls).to.have.length(0)
    })

    it('the tree budget\'s maxDepth lowers the ceiling for the whole tree', async () => {
      const root = h.ctx.agents.create({ label: 'shallow', budget: { maxDepth: 1 } })
      await start(root)
      const error = await rejection(h.ctx.subagents.delegate('alpha', request(childOf(0))))
      expect(error).to.include({ code: 'DEPTH_EXCEEDED', attempted: 2, max: 1 })
      expect(error.message).to.include('tree budget')
    })

    it('the provider gets the carved child budget and the depth ceiling', async () => {
      const root = h.ctx.agents.create({ label: 'r', budget: { maxSteps: 10 } })
      root.budget.charge('steps', 4)
      await start(root, { budget: { maxSteps: 100, maxTokens: 5 } })
      const call = provider.calls[0]
      expect(call.maxDepthCeiling).to.equal(3)
      expect(call.budget!.parent).to.equal(root.budget)
      expect(call.budget!.limits).to.include({ maxSteps: 6, maxTokens: 5 })
      expect(call).to.not.have.property('budget', undefined)
    })

    it('a malformed request budget is INVALID_REQUEST', async () => {
      const error = await rejection(h.ctx.subagents.delegate('alpha', request(h.root, { budget: { maxSteps: -2 } })))
      expect(error).to.include({ code: 'INVALID_REQUEST' })
      const zero = await rejection(h.ctx.subagents.delegate('alpha', request(h.root, { budget: { maxConcurrent: 0 } })))
      expect(zero).to.include({ code: 'INVALID_REQUEST' })
      expect(zero.message).to.include('maxConcurrent must be at least 1')
      expect(() => h.ctx.agents.create({ budget: { maxConcurrent: 0 } })).to.throw(/maxConcurrent must be at least 1/)
      const unknown = await rejection(h.ctx.subagents.delegate('alpha', request(h.root, { budget: { steps: 2 } as never })))
      expect(unknown.message).to.include('unknown key "steps"')
    })
  })

  describe('maxConcurrent: delegated runs of one tree working at once', () => {
    it('the tree\'s slots are shared FIFO by all its parents', async () => {
      await restart({ maxConcurrent: 2 })
      const a = await start(h.root)
      await start(h.root)
      const queued = start(h.root)
      await tick()
      expect(provider.calls).to.have.length(2)
      await a.dispose()
      await queued
      expect(provider.calls).to.have.length(3)
    })

    it('a parent lends its slot to its children: a full tree of nested delegations never deadlocks', async () => {
      await restart({ maxConcurrent: 2 })
      await start(h.root)
      await start(h.root)
      // The tree is full; a child of a slot holder borrows its parent's slot at once.
      const first = childOf(0)
      const g1 = await start(first)
      // The lender's slot is taken by g1: its second child waits for it (and only for it).
      const g2 = start(first)
      const other = start(h.root)
      await tick()
      expect(provider.calls).to.have.length(3)
      await g1.dispose()
      await g2
      expect(provider.calls).to.have.length(4)
      expect(provider.calls[3].parent).to.equal(first)
      // `other` still waits for a slot of the tree's own.
      await tick()
      expect(provider.calls).to.have.length(4)
      await handles[0].dispose()
      await other
      expect(provider.calls).to.have.length(5)
    })

    it('abort while waiting for a tree slot rejects ABORTED and leaves the queue', async () => {
      await restart({ maxConcurrent: 1 })
      await start(h.root)
      const controller = new AbortController()
      const waiting = h.ctx.subagents.delegate('alpha', request(h.root, { signal: controller.signal }))
      await tick()
      controller.abort()
      expect(await rejection(waiting)).to.include({ code: 'ABORTED' })
      await handles[0].dispose()
      await start(h.root) // the slot is free again: nothing stale holds it
      expect(provider.calls).to.have.length(2)
    })

    it('abort while queued in the per-parent gate rejects, leaving no waiter in either gate', async () => {
      await restart({ maxConcurrent: 1 })
      await start(h.root)
      const controller = new AbortController()
      const parentGate = h.ctx.agents.create({ label: 'other-root' })
      await start(parentGate, { budget: { maxConcurrent: 1 } })
      const waiting = rejection(h.ctx.subagents.delegate('alpha', request(parentGate, { signal: controller.signal, budget: { maxConcurrent: 1 } })))
      await tick()
      controller.abort()
      expect(await waiting).to.include({ code: 'ABORTED' })
      await Promise.all(handles.splice(0).map((handle) => handle.dispose()))
      await start(h.root) // the tree's slot is free again, and no stale waiter takes it
      expect(provider.calls).to.have.length(3)
    })

    it('a gate reached with an already aborted signal rejects at once (no abort event would come again)', async () => {
      const { TreeGates } = await import('../src/admission/admission.js')
      const { acquireTreeSlot, workingSlots } = await import('../src/admission/waiters.js')
      const gates = new TreeGates()
      const tree = {}
      await acquireTreeSlot(gates, tree, 1, undefined, new AbortController().signal, () => new Error('aborted'))
      const controller = new AbortController()
      controller.abort()
      let outcome = 'pending'
      acquireTreeSlot(gates, tree, 1, undefined, controller.signal, () => new Error('aborted')).then(() => { outcome = 'granted' }, () => { outcome = 'rejected' })
      await tick()
      expect(outcome).to.equal('rejected')
      expect(workingSlots(gates, tree)).to.equal(1)
    })

    it('a parent with no step left cannot delegate (the child could not take a step)', async () => {
      const root = h.ctx.agents.create({ label: 'last-step', budget: { maxSteps: 1 } })
      root.budget.charge('steps', 1)
      const error = await rejection(h.ctx.subagents.delegate('alpha', request(root)))
      expect(error.breach).to.deep.equal({ budget: 'steps', limit: 1, spent: 1 })
    })

    it('the service stopping rejects starts waiting for a tree slot', async () => {
      await restart({ maxConcurrent: 1 })
      await start(h.root)
      const waiting = rejection(h.ctx.subagents.delegate('alpha', request(h.root)))
      await tick()
      await h.stop()
      expect(await waiting).to.include({ code: 'ABORTED' })
    })

    it('a tool load\'s budget.maxConcurrent caps one parent\'s live children through it', async () => {
      await start(h.root, { budget: { maxConcurrent: 1 } })
      const queued = start(h.root, { budget: { maxConcurrent: 1 } })
      await tick()
      expect(provider.calls).to.have.length(1)
      await handles[0].dispose()
      await queued
      expect(provider.calls).to.have.length(2)
    })
  })

  describe('usage reported by a provider is charged live and validated', () => {
    it('cumulative usage updates charge only their growth; the final usage too; work comes from the tree', async () => {
      const root = h.ctx.agents.create({ label: 'r', budget: { maxTokens: 100 } })
      const run = await start(root)
      const report = (inputTokens: number, outputTokens: number) =>
        provider.calls[0].onUpdate!({ kind: 'usage', usage: { inputTokens, outputTokens } })
      report(10, 5)
      report(20, 10)
      expect(root.budget.spent.tokens).to.equal(30)
      report(-1e18, 5)
      report(Number.POSITIVE_INFINITY, 0)
      provider.calls[0].onUpdate!({ kind: 'usage', usage: { inputTokens: 1.7e308, outputTokens: 0 } })
      expect(root.budget.spent.tokens).to.equal(30)
      provider.last.complete('ok', { usage: { inputTokens: 90, outputTokens: 20 } })
      const outcome = await run.result
      expect(root.budget.spent.tokens).to.equal(110)
      expect(outcome.usage).to.deep.equal({ inputTokens: 90, outputTokens: 20 })
      expect(outcome.work).to.deep.equal({ steps: 0, toolCalls: 0, delegations: 0 })
      // The tree is now over its tokens: the next delegation is refused.
      const error = await rejection(h.ctx.subagents.delegate('alpha', request(root)))
      expect(error.breach).to.deep.equal({ budget: 'tokens', limit: 100, spent: 110 })
    })

    it('work a child elsewhere reports (steps, tool calls, delegations) is charged as it grows', async () => {
      const root = h.ctx.agents.create({ label: 'r', budget: { maxSteps: 50 } })
      const run = await start(root)
      const report = (steps: number, toolCalls: number, delegations: number) =>
        provider.calls[0].onUpdate!({ kind: 'usage', work: { steps, toolCalls, delegations } })
      report(2, 1, 0)
      report(3, 4, 1)
      report(1, 0, 0) // an older report arriving late: spend never goes down
      expect(root.budget.spent).to.deep.include({ steps: 3, toolCalls: 4 })
      // The delegation itself counted one child; the remote tree's own delegation is the second.
      expect(root.budget.spent.children).to.equal(2)
      provider.last.complete('ok', { work: { steps: 5, toolCalls: 4, delegations: 1 } })
      expect((await run.result).work).to.deep.equal({ steps: 5, toolCalls: 4, delegations: 1 })
      expect(root.budget.spent.steps).to.equal(5)
    })

    it('a child elsewhere that overspends the tree is stopped as budget, naming the limit; siblings at their next report', async () => {
      const root = h.ctx.agents.create({ label: 'r', budget: { maxSteps: 6 } })
      const first = await start(root)
      const second = await start(root)
      provider.calls[0].onUpdate!({ kind: 'usage', work: { steps: 3, toolCalls: 0, delegations: 0 } })
      provider.calls[1].onUpdate!({ kind: 'usage', work: { steps: 3, toolCalls: 0, delegations: 0 } })
      // At the limit, not over it: the call that reached it may be the one that answers.
      expect(provider.runs[0].cancels).to.have.length(0)
      provider.calls[0].onUpdate!({ kind: 'usage', work: { steps: 4, toolCalls: 0, delegations: 0 } })
      const outcome = await first.result
      expect(outcome.stopReason).to.equal('budget')
      expect(outcome.budget).to.deep.equal({ budget: 'steps', limit: 6, spent: 7 })
      expect(outcome.diagnostic).to.match(/steps budget/)
      expect(provider.runs[1].cancels).to.have.length(0)
      provider.calls[1].onUpdate!({ kind: 'usage', work: { steps: 4, toolCalls: 0, delegations: 0 } })
      expect((await second.result).stopReason).to.equal('budget')
      // Tokens too: a report past maxTokens stops the run.
      const tokens = h.ctx.agents.create({ label: 't', budget: { maxTokens: 100 } })
      const third = await start(tokens)
      provider.calls[2].onUpdate!({ kind: 'usage', usage: { inputTokens: 90, outputTokens: 20 } })
      expect((await third.result).stopReason).to.equal('budget')
    })

    it('a child elsewhere that reports nothing is stopped at its wall-time deadline (its own maxWallMs), naming the limit', async () => {
      const root = h.ctx.agents.create({ label: 'r' })
      const started = Date.now()
      const run = await start(root, { budget: { maxWallMs: 150 } })
      const outcome = await run.result
      expect(outcome.stopReason).to.equal('budget')
      expect(outcome.budget).to.include({ budget: 'wallMs', limit: 150 })
      expect(Date.now() - started).to.be.at.least(140)
      expect(provider.runs[0].cancels).to.have.length(1)
      // A child that ends first leaves no timer behind to stop it later.
      const quick = await start(root, { budget: { maxWallMs: 150 } })
      provider.last.complete('ok')
      expect((await quick.result).stopReason).to.equal('completed')
    })

    it('a budget an in-process child spends from itself is never judged by reports (it checks before it spends)', async () => {
      const root = h.ctx.agents.create({ label: 'r', budget: { maxTokens: 10 } })
      await start(root)
      const budget = provider.calls[0].budget as Budget
      budget.adopt()
      // The in-process agent's last call took it past the tokens (an overshoot of one call, by design).
      budget.charge('tokens', 15)
      provider.calls[0].onUpdate!({ kind: 'usage', usage: { inputTokens: 15, outputTokens: 0 } })
      expect(provider.runs[0].cancels).to.have.length(0)
      provider.last.complete('ok')
    })

    it('a result whose usage is not finite non-negative integers has its usage dropped', async () => {
      const run = await start(h.root)
      provider.last.complete('ok', { usage: { inputTokens: -5, outputTokens: Number.NaN } })
      expect(await run.result).to.not.have.property('usage')
    })
  })

  describe('limit stops are reported as limits, not as cancels', () => {
    for (const [reason, stop] of [
      [new LimitError('TIMEOUT', 'the subagent tool\'s timeout of 10 ms elapsed'), 'timeout'],
      [new LimitError('BUDGET_EXCEEDED', 'out of tokens', { budget: 'tokens', limit: 10, spent: 11 }), 'budget'],
      [new Error('the user cancelled'), 'aborted'],
    ] as const) {
      it(`a caller signal aborted with ${reason.message} → ${stop}`, async () => {
        const controller = new AbortController()
        const run = await start(h.root, { signal: controller.signal })
        controller.abort(reason)
        const outcome = await run.result
        expect(outcome.stopReason).to.equal(stop)
        if (stop === 'budget') expect(outcome.budget).to.deep.equal({ budget: 'tokens', limit: 10, spent: 11 })
        if (stop === 'timeout') expect(outcome.diagnostic).to.include('timeout of 10 ms')
        expect(outcome.output).to.equal('partial')
      })
    }
  })
})
