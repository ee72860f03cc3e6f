// A host whose parent agents delegate to the quick start's own ACP agent (serve-acp's bin on acp-agent.yml) through
// the real provider-acp: tools, agents, subagents, the workspace tools as the parent's tools.
import { Context } from 'cordis'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime from '@cordis-subagents/agent'
import SubagentService from '@cordis-subagents/subagents-service'
import * as acp from '@cordis-subagents/provider-acp'
import * as workspaceTools from '@cordis-subagents/quickstart/workspace-tools'
import { ACP_AGENT, ROOT } from '../helpers.js'

export async function startQuickstartAcpHost(options: { agents?: AgentRuntime.Config; acp?: Partial<acp.Config> } = {}): Promise<Context> {
  const ctx = new Context()
  ctx.plugin(ToolRegistry)
  ctx.plugin(AgentRuntime, options.agents ?? {})
  ctx.plugin(SubagentService)
  // The parent's tools: the ACP child may use only what its parent may (SUBAGENT_ALLOWED_TOOLS).
  ctx.plugin(workspaceTools, { root: ROOT } as never)
  ctx.plugin(acp, {
    name: 'acp',
    command: process.execPath,
    args: ACP_AGENT,
    cwd: ROOT,
    ...options.acp,
  } as acp.Config)
  await ctx.start()
  await ctx.lifecycle.flush()
  return ctx
}
