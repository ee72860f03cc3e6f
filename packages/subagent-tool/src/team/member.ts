import type { AgentDefinition, AgentDefinitions } from '@cordis-subagents/definitions'
import type { SubagentService } from '@cordis-subagents/subagents-service'
import type { ToolResult } from '@cordis-subagents/tools'
import type { DelegateOptions } from '../call-types.js'

/** The delegation options of one team member: its provider, soul, tools, budget and model, over the load's own limits. */
export function memberOptions(
  base: Omit<DelegateOptions, 'provider'>, member: AgentDefinition, subagents: SubagentService, definitions: AgentDefinitions,
  talk: readonly string[] = [],
): DelegateOptions {
  const options: DelegateOptions = {
    provider: member.provider,
    timeout: base.timeout,
    maxOutputBytes: base.maxOutputBytes,
  }
  if (base.questions) options.questions = base.questions
  if (base.maxDepth !== undefined) options.maxDepth = base.maxDepth
  if (base.resume !== undefined) options.resume = base.resume
  if (base.reattach) options.reattach = true
  if (member.budgetNote ?? base.budgetNote) options.budgetNote = true
  if (member.tellParent ?? base.tellParent) options.tellParent = true
  const budget = member.budget ?? base.budget
  if (budget) options.budget = { ...budget }
  const output = member.output ?? base.output
  if (output) options.output = output
  const model = member.model ?? base.agentOptions?.model
  options.agentOptions = model ? { model, name: member.name } : { name: member.name }
  if (member.soul !== undefined) options.persona = member.soul
  const filter = childFilter(member, subagents, definitions, talk)
  if (filter) options.toolFilter = filter
  return options
}

/**
 * The member's `uses`, plus: every team tool that does not serve the member's own team is hidden
 * from it, so a child has a delegation tool only when its definition has a team (and a tool serves
 * it); the talk tools of the load that starts it (`talk`) are its own, other loads' are hidden.
 * Only for providers that take a tool filter: a child elsewhere sees none of our tools anyway.
 */
function childFilter(member: AgentDefinition, subagents: SubagentService, definitions: AgentDefinitions, talk: readonly string[]) {
  const provider = subagents.get(member.provider)
  const uses = member.uses
  if (!provider?.capabilities.toolFilter) return uses && { ...uses }
  const own: string[] = []
  const others: string[] = []
  // This load's talk tools are the member's own (it is in this team); other loads' are hidden like their team tools.
  own.push(...talk)
  for (const [tool, agent] of definitions.teamTools()) {
    if (!talk.includes(tool)) (agent === member.name && member.team.length ? own : others).push(tool)
  }
  const deny = [...uses?.deny ?? [], ...others]
  const filter: { allow?: string[]; deny?: string[] } = {}
  if (uses?.allow) filter.allow = [...uses.allow, ...own.filter((tool) => !uses.allow!.includes(tool))]
  if (deny.length) filter.deny = deny
  return filter.allow || filter.deny ? filter : undefined
}

/**
 * The tool result of a member's delegation, with the member's name beside the provider's; a suspended
 * call keeps it (and the provider) in its state, so its continuation reports the same.
 */
export function withAgent(result: ToolResult, agent: string, provider: string): ToolResult {
  result.metadata = { agent, ...result.metadata }
  if (result.suspend) result.suspend.state = { ...result.suspend.state as object, agent, provider }
  return result
}

/** The member and provider a suspended team call kept in its state (see `withAgent`). */
export function suspendedMember(state: unknown, fallback: string): { agent: string; provider: string } {
  const { agent, provider } = (state ?? {}) as { agent?: unknown; provider?: unknown }
  return { agent: typeof agent === 'string' ? agent : fallback, provider: typeof provider === 'string' ? provider : fallback }
}
