// A parent host of ours for the specs that cross the boundary: the real services, the parent's own
// tools, and the real provider-acp launching the served bin on a cordis.yml (test code only).
import { Context } from 'cordis'
import ToolRegistry, { type Tool } from '@cordis-subagents/tools'
import AgentRuntime from '@cordis-subagents/agent'
import SubagentService from '@cordis-subagents/subagents-service'
import * as acp from '@cordis-subagents/provider-acp'
import { BIN, type Workspace } from './helpers.js'

/** Starts the parent with `tools` registered and an `acp` provider running the bin on `config` in `ws`. */
export async function parentHost(ws: Workspace, config: string, tools: Tool[], extra: Partial<acp.Config> = {}): Promise<Context> {
  const host = new Context()
  host.plugin(ToolRegistry)
  host.plugin(AgentRuntime, {})
  host.plugin(SubagentService)
  host.plugin({
    name: 'parent-tools', inject: ['tools'],
    apply: (ctx: Context) => { for (const tool of tools) ctx.tools.register(tool) },
  })
  host.plugin(acp, { name: 'acp', command: process.execPath, args: [BIN, config], cwd: ws.dir, ...extra } as acp.Config)
  await host.start()
  await host.lifecycle.flush()
  return host
}
