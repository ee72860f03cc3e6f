import { addUsage, addWork, emptyUsage, emptyWork, type Usage, type WorkCounts } from '@cordis-subagents/shared'
import type { AgentUsage, AgentWork } from './types.js'

// `total` is an own enumerable accessor (it shows in JSON and `Object.keys`), with one getter
// function for every tally of a kind, reading `this`, and one class per kind: each kind then keeps
// one shared hidden class. A closure per object, or two kinds sharing a shape with different
// getters, puts a tally in dictionary mode (≈ 350 bytes more per agent and tally).

function usageTotal(this: AgentUsage): Usage {
  return addUsage(this.own, this.delegated)
}

function workTotal(this: AgentWork): WorkCounts {
  return addWork(this.own, this.delegated)
}

class UsageTally {
  own = emptyUsage()
  delegated = emptyUsage()
  constructor() {
    Object.defineProperty(this, 'total', { enumerable: true, get: usageTotal })
  }
}

class WorkTally {
  own = emptyWork()
  delegated = emptyWork()
  constructor() {
    Object.defineProperty(this, 'total', { enumerable: true, get: workTotal })
  }
}

/** An agent's token tally: `own` and `delegated`, and `total` computed from them when read. */
export function usageTally(): AgentUsage {
  return new UsageTally() as unknown as AgentUsage
}

/** An agent's work tally (steps, tool calls, delegations): `own`, `delegated` and a computed `total`. */
export function workTally(): AgentWork {
  return new WorkTally() as unknown as AgentWork
}
