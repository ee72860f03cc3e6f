import { Context } from 'cordis'
import { z } from 'zod'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime, { ScriptedModel } from '@cordis-subagents/agent'
import McpServe from '@cordis-subagents/serve-mcp'

export const SERVE_TOKEN = 'spec-token-0123456789'

/** A small app serving `whoami` (and an absent tool) over HTTP with SERVE_TOKEN; resolves once it listens. */
export async function serveApp(config: Record<string, unknown>): Promise<Context> {
  const ctx = new Context()
  ctx.plugin(ToolRegistry)
  ctx.plugin(AgentRuntime, { model: 'test' })
  ctx.plugin({ name: 'model', inject: ['agents'], apply: (c: Context) => { c.agents.registerModel('test', new ScriptedModel([])) } })
  ctx.plugin({
    name: 'whoami', inject: ['tools'],
    apply: (c: Context) => {
      c.tools.register({ name: 'whoami', description: 'Says who calls.', input: z.object({}), execute: (_input, exec) => ({ content: `caller depth ${exec.agent.depth}` }) })
    },
  })
  ctx.plugin(McpServe, { transport: 'http', tools: ['whoami', 'absent'], token: SERVE_TOKEN, ...config })
  await ctx.start()
  await ctx.lifecycle.flush()
  for (let i = 0; i < 200 && !ctx.get('mcpServe')?.url; i++) await new Promise((resolve) => setTimeout(resolve, 20))
  return ctx
}
