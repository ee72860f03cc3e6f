import type { BudgetNoteOptions, TellParentOptions } from '@cordis-subagents/agent'

/**
 * What the child agent is made with. `budgetNote` / `tellParent`: an in-process provider (spawn,
 * fork) passes them to `ctx.agents.create` (the child sees its budget; it gets a `tell_parent` tool);
 * provider-acp and provider-a2a pass them in the crossing to a host of ours (serve-acp, serve-a2a),
 * which a third-party agent ignores.
 */
export interface ChildAgentOptions {
  model?: string
  name?: string
  budgetNote?: boolean | BudgetNoteOptions
  tellParent?: boolean | TellParentOptions
}
