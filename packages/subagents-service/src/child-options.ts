import type { BudgetNoteOptions, TellParentOptions } from '@cordis-subagents/agent'

/**
 * What the child agent is made with. `budgetNote` / `tellParent`: an in-process provider (spawn,
 * fork) passes them to `ctx.agents.create` (the child sees its budget; it gets a `tell_parent` tool);
 * other providers ignore them.
 */
export interface ChildAgentOptions {
  model?: string
  name?: string
  budgetNote?: boolean | BudgetNoteOptions
  tellParent?: boolean | TellParentOptions
}
