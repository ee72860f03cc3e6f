import type { AgentDefinition } from '@cordis-subagents/definitions'

/** The team tool's description: what delegating is, then each member (sorted by name) with its `does`. */
export function describeTeam(members: readonly Pick<AgentDefinition, 'name' | 'does'>[]): string {
  const lines = [
    'Delegate a self-contained task to a member of your team, named by `agent`. The member does not see this',
    'conversation: the prompt must be a complete, standalone brief with every fact, file path, constraint and the',
    'exact form of answer you want back. Only its final answer comes back to you. To run several at once, call',
    'this tool several times in the same step. Your team:',
  ]
  const team = members.map((member) => `- ${member.name}: ${member.does}`)
  return `${lines.join(' ')}\n${team.join('\n')}`
}

/** What the model reads when it names an agent outside its team: the names it may use. */
export function outsideTeam(name: unknown, team: readonly string[]): string {
  return `No agent ${JSON.stringify(name)} in your team. Your team: ${team.join(', ')}.`
}

export const AGENT_DESCRIPTION = 'The team member to delegate to (one of the names listed in this tool\'s description).'
