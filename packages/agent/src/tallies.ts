import { addUsage, addWork, emptyUsage, emptyWork } from '@cordis-subagents/shared'
import type { AgentUsage, AgentWork } from './types.js'

/** An agent's token tally: `own` and `delegated`, and `total` computed from them when read. */
export function usageTally(): AgentUsage {
  const usage = { own: emptyUsage(), delegated: emptyUsage() }
  return Object.defineProperty(usage, 'total', { enumerable: true, get: () => addUsage(usage.own, usage.delegated) }) as AgentUsage
}

/** An agent's work tally (steps, tool calls, delegations): `own`, `delegated` and a computed `total`. */
export function workTally(): AgentWork {
  const work = { own: emptyWork(), delegated: emptyWork() }
  return Object.defineProperty(work, 'total', { enumerable: true, get: () => addWork(work.own, work.delegated) }) as AgentWork
}
