/// <reference types="mocha" />
import { expect } from 'chai'
import fc from 'fast-check'
import { Budget } from '@cordis-subagents/agent'

describe('Budget: carved limits, spend charged up the chain', () => {
  it('a root budget has no limits unless given; Infinity where none applies', () => {
    const root = Budget.root()
    expect(root.limits.maxSteps).to.equal(Infinity)
    expect(root.check('steps', 1_000_000)).to.equal(undefined)
    expect(root.overtime()).to.equal(undefined)
    expect(root.root).to.equal(root)
  })

  it('exactly N steps are allowed, the N+1st is a breach naming limit and spend', () => {
    const root = Budget.root({ maxSteps: 3 })
    for (let i = 0; i < 3; i++) {
      expect(root.check('steps')).to.equal(undefined)
      root.charge('steps', 1)
    }
    expect(root.check('steps')).to.deep.equal({ budget: 'steps', limit: 3, spent: 3 })
  })

  it('tokens: allowed while any is left, a breach once spent reaches the limit', () => {
    const root = Budget.root({ maxTokens: 100 })
    root.charge('tokens', 99)
    expect(root.check('tokens')).to.equal(undefined)
    root.charge('tokens', 1)
    expect(root.check('tokens')).to.deep.equal({ budget: 'tokens', limit: 100, spent: 100 })
  })

  it('a child is carved as min(its own, what the parent has left) and never gets more', () => {
    const root = Budget.root({ maxSteps: 10, maxTokens: 1000, maxChildren: 5 })
    root.charge('steps', 4)
    root.charge('tokens', 900)
    const child = root.child({ maxSteps: 50, maxTokens: 50, maxToolCalls: 7 })
    expect(child.limits.maxSteps).to.equal(6) // parent had 6 left; the child asked for 50
    expect(child.limits.maxTokens).to.equal(50) // its own is lower than the 100 left
    expect(child.limits.maxToolCalls).to.equal(7) // the parent had no limit of its own
    expect(child.limits.maxChildren).to.equal(5)
    expect(child.root).to.equal(root)
  })

  it('spend is charged to every ancestor, so a sibling spending a shared budget stops the other', () => {
    const root = Budget.root({ maxSteps: 5 })
    const a = root.child()
    const b = root.child()
    a.charge('steps', 4)
    expect(root.spent.steps).to.equal(4)
    expect(b.check('steps')).to.equal(undefined)
    b.charge('steps', 1)
    // b's own carved limit (5) is not spent, but the root's is: a's spend counts.
    expect(b.check('steps')).to.deep.equal({ budget: 'steps', limit: 5, spent: 5 })
    expect(a.check('steps')).to.deep.equal({ budget: 'steps', limit: 5, spent: 5 })
  })

  it('chargeTokensUpTo charges only the growth of a running total reported from elsewhere', () => {
    const root = Budget.root()
    const child = root.child()
    child.chargeTokensUpTo(15)
    child.chargeTokensUpTo(30)
    child.chargeTokensUpTo(25) // a total going down is ignored
    child.chargeTokensUpTo(Number.POSITIVE_INFINITY)
    expect(child.spent.tokens).to.equal(30)
    expect(root.spent.tokens).to.equal(30)
  })

  it('chargeUpTo charges the growth of reported steps, tool calls and delegations; exceeded() names a limit spend has passed', () => {
    const root = Budget.root({ maxSteps: 6, maxToolCalls: 100 })
    const remote = root.child()
    remote.chargeUpTo('steps', 4)
    remote.chargeUpTo('steps', 3) // out of order: never down
    remote.chargeUpTo('toolCalls', 7)
    remote.chargeUpTo('children', 2)
    expect(root.spent).to.deep.include({ steps: 4, toolCalls: 7, children: 2 })
    // At the limit is not over it: the call that reached it may be the one that answers.
    remote.chargeUpTo('steps', 6)
    expect(remote.exceeded()).to.equal(undefined)
    remote.chargeUpTo('steps', 7)
    expect(remote.exceeded()).to.deep.equal({ budget: 'steps', limit: 6, spent: 7 })
    // A sibling shares the ancestor's limit, so it sees the breach too.
    expect(root.child().exceeded()).to.deep.equal({ budget: 'steps', limit: 6, spent: 7 })
  })

  it('an adopted budget says so in spentInProcess, and reported totals charge it nothing (its agent charged as it spent)', () => {
    const root = Budget.root()
    const child = root.child()
    expect(child.spentInProcess).to.equal(false)
    child.adopt()
    expect(child.spentInProcess).to.equal(true)
    expect(root.spentInProcess).to.equal(false)
    child.chargeTokensUpTo(40)
    child.chargeUpTo('steps', 3)
    expect(child.spent).to.deep.include({ tokens: 0, steps: 0 })
    expect(root.spent).to.deep.include({ tokens: 0, steps: 0 })
    child.charge('steps', 1)
    expect(root.spent.steps).to.equal(1)
  })

  it('watch() tells one listener about every charge anywhere in the tree, with the root\'s spend', () => {
    const root = Budget.root()
    const seen: number[] = []
    const unwatch = root.child().watch((spent) => seen.push(spent.steps + spent.toolCalls))
    root.charge('steps', 1)
    root.child().child().charge('toolCalls', 2)
    unwatch()
    root.charge('steps', 1)
    expect(seen).to.deep.equal([1, 3])
  })

  it('a budget an in-process agent spends from is not charged again by reported totals', () => {
    const root = Budget.root()
    const child = root.child()
    child.adopt()
    child.charge('tokens', 30) // charged by the agent as it spent
    child.chargeTokensUpTo(30) // the provider's final usage includes it: nothing more
    child.chargeTokensUpTo(80)
    expect(root.spent.tokens).to.equal(30)
  })

  it('only runs holding a limit of their own (and the root) are charged and checked', () => {
    const root = Budget.root({ maxSteps: 10 })
    const middle = root.child() // carved: 10, not a limit of its own
    const tight = middle.child({ maxSteps: 4 })
    const leaf = tight.child()
    leaf.charge('steps', 3)
    expect(leaf.spent.steps).to.equal(3)
    expect(tight.spent.steps).to.equal(3)
    expect(root.spent.steps).to.equal(3)
    expect(middle.spent.steps).to.equal(0) // its carved limit can never bind first
    leaf.charge('steps', 1)
    expect(leaf.check('steps')).to.deep.equal({ budget: 'steps', limit: 4, spent: 4 })
    root.charge('steps', 5)
    // tight has 0 left; the root 1: the tighter one answers.
    expect(leaf.remaining().maxSteps).to.equal(0)
    expect(middle.remaining().maxSteps).to.equal(1)
  })

  it('wall time: the deadline is the nearer of the child\'s own and the parent\'s; a breach names the run that holds it', () => {
    const now = 1_000_000
    const root = Budget.root({ maxWallMs: 1000 }, now)
    const child = root.child({ maxWallMs: 5000 }, now + 400)
    expect(child.deadline).to.equal(now + 1000)
    expect(child.holdsWallTime).to.equal(false) // its own 5,000 ms is not tighter: the root's timer stops it
    expect(child.overtime(now + 999)).to.equal(undefined)
    expect(child.overtime(now + 1000)).to.deep.equal({ budget: 'wallMs', limit: 1000, spent: 1000 })
    const tight = root.child({ maxWallMs: 100 }, now + 400)
    expect(tight.holdsWallTime).to.equal(true)
    expect(tight.overtime(now + 500)).to.deep.equal({ budget: 'wallMs', limit: 100, spent: 100 })
  })

  it('extending wall time raises only the deadline that passed; runs inheriting it see the extension', () => {
    const past = performance.now() - 5000
    // A child holding a tighter deadline: extending it leaves the root's alone.
    const root = Budget.root({ maxWallMs: 1000 }, past)
    const child = root.child({ maxWallMs: 900 }, past)
    const breach = child.overtime()!
    expect(breach).to.include({ limit: 900 })
    child.extend(breach, 60_000)
    expect(root.deadline).to.equal(past + 1000)
    expect(root.limits.maxWallMs).to.equal(1000)
    expect(child.overtime()).to.include({ limit: 1000 }) // the root's passed deadline still binds
    // A child inheriting its parent's deadline sees the parent's extension.
    const parent = Budget.root({ maxWallMs: 1000 }, past)
    const inheriting = parent.child({}, past)
    parent.extend(parent.overtime()!, 60_000)
    expect(inheriting.overtime()).to.equal(undefined)
    expect(inheriting.deadline).to.equal(parent.deadline)
  })

  it('extend raises the binding limit on the chain, and the ancestor above may still bind', () => {
    const root = Budget.root({ maxSteps: 10 })
    const child = root.child({ maxSteps: 2 })
    child.charge('steps', 2)
    const breach = child.check('steps')!
    expect(breach).to.deep.equal({ budget: 'steps', limit: 2, spent: 2 })
    child.extend(breach, 3)
    expect(child.check('steps')).to.equal(undefined)
    expect(child.limits.maxSteps).to.equal(5)
    expect(root.limits.maxSteps).to.equal(10)
    child.extend(breach, 0) // not a positive number: ignored
    child.extend(breach, Number.NaN)
    expect(child.limits.maxSteps).to.equal(5)
  })

  it('remaining() is what a provider passes on (e.g. to a subprocess)', () => {
    const root = Budget.root({ maxSteps: 10, maxChildren: 4, maxDepth: 3 }, 0)
    root.charge('steps', 3)
    root.charge('children', 1)
    expect(root.remaining(0)).to.include({ maxSteps: 7, maxChildren: 3, maxDepth: 3, maxTokens: Infinity })
  })

  it('property: in any tree, after any charges, every run has left exactly what a walk of all its ancestors gives', () => {
    // The oracle skips the "binding" shortcut: a run's limit is min(own, its parent's left when it starts); spend anywhere
    // counts for every run above; what a run has left is the least, over itself and every ancestor, of limit - spend.
    type Name = 'steps' | 'tokens' | 'toolCalls' | 'children'
    const names: Name[] = ['steps', 'tokens', 'toolCalls', 'children']
    const key = { steps: 'maxSteps', tokens: 'maxTokens', toolCalls: 'maxToolCalls', children: 'maxChildren' } as const
    interface Node { budget: Budget; parent?: Node; limit: Record<Name, number>; spent: Record<Name, number> }
    const leftOf = (node: Node, name: Name) => {
      let min = Infinity
      for (let at: Node | undefined = node; at; at = at.parent) min = Math.min(min, at.limit[name] - at.spent[name])
      return Math.max(0, min)
    }
    const limit = fc.option(fc.integer({ min: 0, max: 20 }), { nil: undefined })
    const own = fc.record({ maxSteps: limit, maxTokens: limit, maxToolCalls: limit, maxChildren: limit })
    const op = fc.oneof(
      fc.record({ kind: fc.constant('child' as const), at: fc.nat(), own }),
      fc.record({ kind: fc.constant('charge' as const), at: fc.nat(), name: fc.constantFrom(...names), amount: fc.integer({ min: 1, max: 6 }) }),
    )
    fc.assert(fc.property(own, fc.array(op, { maxLength: 40 }), (rootOwn, ops) => {
      const root: Node = { budget: Budget.root(rootOwn, 0), limit: {} as Node['limit'], spent: { steps: 0, tokens: 0, toolCalls: 0, children: 0 } }
      for (const name of names) root.limit[name] = rootOwn[key[name]] ?? Infinity
      const nodes = [root]
      for (const step of ops) {
        const node = nodes[step.at % nodes.length]
        if (step.kind === 'charge') {
          node.budget.charge(step.name, step.amount)
          for (let at: Node | undefined = node; at; at = at.parent) at.spent[step.name] += step.amount
          continue
        }
        const child: Node = { budget: node.budget.child(step.own, 0), parent: node, limit: {} as Node['limit'], spent: { steps: 0, tokens: 0, toolCalls: 0, children: 0 } }
        for (const name of names) child.limit[name] = Math.min(step.own[key[name]] ?? Infinity, leftOf(node, name))
        nodes.push(child)
      }
      for (const node of nodes) {
        const remaining = node.budget.remaining(0)
        for (const name of names) {
          expect(node.budget.limits[key[name]], `${name} limit`).to.equal(node.limit[name])
          expect(remaining[key[name]], `${name} left`).to.equal(leftOf(node, name))
          expect(node.budget.check(name) === undefined, `${name} check`).to.equal(name === 'tokens' ? leftOf(node, name) > 0 : leftOf(node, name) >= 1)
        }
      }
    }), { numRuns: 400 })
  })
})
