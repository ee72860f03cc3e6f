/**
 * What the quick start's served agents share (the ACP agent, acp-agent.ts, and the A2A server,
 * a2a-server.ts): a cordis Context with the tool registry, the agent runtime, the model (the
 * offline demo model, or model-openai when OPENAI_BASE_URL / OPENAI_API_KEY reach the process)
 * and the workspace tools; and the limits a delegating parent sends along
 * (`cordisSubagents: { depth, maxDepth, budget, allowedTools }`), read defensively.
 */
import type { Context } from 'cordis'
import type { ToolView } from '@cordis-subagents/tools'

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

/** What a delegating parent of ours sends (provider-acp in `_meta`, provider-a2a in message metadata). */
export interface ParentLimits {
  depth?: number
  maxDepth?: number
  budget?: Record<string, number>
  allowedTools?: string[]
}

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/
const BUDGET_KEYS = ['maxSteps', 'maxTokens', 'maxToolCalls', 'maxWallMs', 'maxChildren'] as const

/** The `cordisSubagents` entry of a `_meta` / metadata object; malformed fields are dropped (only non-negative safe integers count). */
export function parentLimits(meta: unknown): ParentLimits {
  const given = (meta as { cordisSubagents?: Record<string, unknown> } | null | undefined)?.cordisSubagents
  if (!given || typeof given !== 'object') return {}
  const limits: ParentLimits = {}
  if (isLimit(given.depth)) limits.depth = given.depth as number
  if (isLimit(given.maxDepth)) limits.maxDepth = given.maxDepth as number
  const budget = given.budget && typeof given.budget === 'object' ? given.budget as Record<string, unknown> : {}
  const kept: Record<string, number> = {}
  for (const key of BUDGET_KEYS) if (isLimit(budget[key])) kept[key] = budget[key] as number
  if (Object.keys(kept).length) limits.budget = kept
  const tools = ceilingFrom(given.allowedTools)
  if (tools) limits.allowedTools = tools
  return limits
}

/** A ceiling from the parent: a list of tool names (an array, or comma-separated), or undefined when none was given. */
export function ceilingFrom(value: unknown): string[] | undefined {
  if (typeof value === 'string') return value.split(',').filter((name) => TOOL_NAME.test(name)).slice(0, 256)
  if (Array.isArray(value)) return value.slice(0, 256).filter((name): name is string => typeof name === 'string' && TOOL_NAME.test(name))
  return undefined
}

/** `view` restricted to every ceiling given (the intersection; an absent ceiling restricts nothing). */
export function underCeilings(view: ToolView, ...ceilings: Array<string[] | undefined>): ToolView {
  let out = view
  for (const allow of ceilings) if (allow) out = out.restrict({ allow })
  return out
}

/** The budget limits to create a served agent with: the parent's budget and depth ceiling, when given. */
export function budgetOf(limits: ParentLimits): Record<string, number> | undefined {
  const budget: Record<string, number> = { ...limits.budget }
  if (limits.maxDepth !== undefined) budget.maxDepth = limits.maxDepth
  return Object.keys(budget).length ? budget : undefined
}

function isLimit(value: unknown): boolean {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
}
