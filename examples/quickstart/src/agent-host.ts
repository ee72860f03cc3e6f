/**
 * What the quick start's served agents share (the ACP agent, acp-agent.ts, and the A2A server,
 * a2a-server.ts): a cordis Context with the tool registry, the agent runtime, the model (the
 * offline demo model, or model-openai when OPENAI_BASE_URL / OPENAI_API_KEY reach the process)
 * and the workspace tools. The limits a delegating parent sends along are applied by the serving
 * plugins through ctx.agents (the crossing of @cordis-subagents/shared), not here.
 */
import type { Context } from 'cordis'

/** Starts the served agent's Context. Logs go wherever cordis' logger goes (the caller routes them). */
export async function startAgentHost(before?: (ctx: Context) => void | Promise<void>): Promise<Context> {
  const [{ Context }, { default: ToolRegistry }, { default: AgentRuntime }, demoModel, workspaceTools] = await Promise.all([
    import('cordis'),
    import('@cordis-subagents/tools'),
    import('@cordis-subagents/agent'),
    import('./demo-model.js'),
    import('./workspace-tools.js'),
  ])
  const useOpenAI = !!(process.env.OPENAI_API_KEY || process.env.OPENAI_BASE_URL)
  const ctx = new Context()
  ctx.plugin(ToolRegistry)
  ctx.plugin(AgentRuntime, { model: useOpenAI ? 'openai' : 'demo' })
  if (useOpenAI) ctx.plugin(await import('@cordis-subagents/model-openai'), { name: 'openai' })
  else ctx.plugin(demoModel, { name: 'demo' })
  ctx.plugin(workspaceTools, {} as never)
  await before?.(ctx)
  await ctx.start()
  await ctx.lifecycle.flush()
  return ctx
}

/** The persona of a served agent; `via` names the protocol. The demo model reads the depth from it. */
export function servedPersona(via: 'ACP' | 'A2A', depth: number): string {
  return `You are a read-only research agent working in a code workspace, reached over ${via} at depth ${depth}. Use the tools to look at files and answer concisely from what you read.`
}
