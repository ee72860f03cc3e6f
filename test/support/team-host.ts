// The host the team specs start: spawn, the agent definitions with `agents` loaded, and one subagent-tool
// load per entry of `tools` (test code only).
import AgentDefinitions from '@cordis-subagents/definitions'
import * as Agents from '@cordis-subagents/definitions/agents'
import * as Spawn from '@cordis-subagents/provider-spawn'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import { type Host, startHost } from './host.js'

export function startTeamHost(agents: Record<string, object>, tools: Array<Record<string, unknown>>): Promise<Host> {
  return startHost({
    before(ctx) {
      ctx.plugin(Spawn, { name: 'spawn' })
      ctx.plugin(AgentDefinitions)
      ctx.plugin(Agents, { agents } as never)
      for (const tool of tools) ctx.plugin(SubagentTool, tool as never)
    },
  })
}
