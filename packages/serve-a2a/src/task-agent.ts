import { type Agent, type AgentCheckpoint, type AgentRuntime, askParentTool } from '@cordis-subagents/agent'
import type { Crossing, ServedLimits } from '@cordis-subagents/shared'
import type { Tool, ToolRegistry, ToolView } from '@cordis-subagents/tools'
import type { Config } from './config.js'
import { tellTask } from './task-tell.js'

type Host = { agents: AgentRuntime; tools: ToolRegistry; config: Config }

/**
 * What the agent of a task is held to (the served-limits rule, through ctx.agents): this process's
 * crossing, the parent's (`crossing`) and the config's `maxDepth` and `budget`. `refusal`: too deep.
 */
export function taskLimits(host: Host, crossing: Crossing): ServedLimits {
  return host.agents.servedLimits({ crossing, maxDepth: host.config.maxDepth, budget: host.config.budget })
}

/**
 * The agent of one task: the configured model, persona (`{depth}` replaced), cwd, tools under
 * the parent's tool ceiling (plus the ask tool with `askParent`: the client answers it), and the
 * root limits the config and the parent's crossing allow.
 */
export function createTaskAgent(host: Host, limits: ServedLimits): Agent {
  const { config } = host
  return host.agents.createServed(limits, { label: 'a2a', model: config.model, persona: config.persona, cwd: config.cwd, ...toolsOf(host), tell: tellTask })
}

/** The agent of a task another host saved (its checkpoint), rebuilt here with the same crossing's tools and limits. */
export function restoreTaskAgent(host: Host, crossing: Crossing, checkpoint: AgentCheckpoint): Agent {
  return host.agents.createServed(taskLimits(host, crossing), { label: 'a2a', restore: checkpoint, ...toolsOf(host), tell: tellTask })
}

/** Each host's tools, made at its first task: a view is a live window on the registry and the ask tool keeps no state. */
const prepared = new WeakMap<Host, { tools: ToolView; ownTools: Tool<any>[] }>()

/** The configured tools (ctx.agents puts them under the parent's ceiling), and the ask tool: this server's own, answered by the client. */
function toolsOf(host: Host) {
  let parts = prepared.get(host)
  if (parts) return parts
  const { tools } = host.config
  // The schema fills an absent list with []: an empty list is "not given", not "nothing".
  const filter = { ...tools?.allow?.length ? { allow: tools.allow } : {}, ...tools?.deny?.length ? { deny: tools.deny } : {} }
  const view = host.tools.view(Object.keys(filter).length ? filter : undefined)
  parts = { tools: view, ownTools: host.config.askParent ? [askParentTool({ name: host.config.askParentTool })] : [] }
  prepared.set(host, parts)
  return parts
}
