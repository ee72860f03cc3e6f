import type { BudgetLimits, OutputOptions } from '@cordis-subagents/agent'

/** Which of its parent's tools the agent's child view sees (a child never sees more than its parent). */
export interface ToolUse {
  allow?: string[]
  deny?: string[]
}

/** A named agent, as `ctx.agentDefinitions` holds it (frozen; the soul file already read). */
export interface AgentDefinition {
  readonly name: string
  /** The routing line a delegating model sees: what this agent is for. */
  readonly does: string
  /** Tool filter of its child view; undefined: every tool of its parent. */
  readonly uses?: Readonly<ToolUse>
  /** Its system prompt (the `soul` text, or the content of `soulFile`); undefined: the provider's default. */
  readonly soul?: string
  /** The absolute path its soul was read from, when it came from a file. */
  readonly soulFile?: string
  /** The agents it may delegate to, sorted; empty: it gets no delegation tool. */
  readonly team: readonly string[]
  readonly budget?: Readonly<BudgetLimits>
  /** A typed result: its answer must be JSON matching this schema (checked at load). */
  readonly output?: Readonly<OutputOptions>
  /** Its model sees what is left of its budget in a note rebuilt every step (issue 44); undefined: the tool load's setting. */
  readonly budgetNote?: boolean
  /** It gets a `tell_parent` tool (a message to its caller's model without stopping); undefined: the tool load's setting. */
  readonly tellParent?: boolean
  /** Model ref (`name` or `name:modelId`); undefined: its parent's model. */
  readonly model?: string
  /** The subagents provider it runs on (`spawn`, `fork`, `acp`, `a2a`, …). */
  readonly provider: string
  /** Where it was defined: `config` or the file it was read from. */
  readonly source: string
}

/** A definition as written in a config entry or derived from a file, before it is checked. */
export interface DefinitionInput {
  does: string
  uses?: ToolUse
  soul?: string
  soulFile?: string
  team?: string[]
  budget?: BudgetLimits
  output?: OutputOptions
  budgetNote?: boolean
  tellParent?: boolean
  model?: string
  provider?: string
}
