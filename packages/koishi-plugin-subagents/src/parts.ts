// What each section of the form loads: the cordis packages, unchanged, each with its own config. A section
// holds one component's schema (plus `enabled` for the switchable ones, and `toolName` where a provider
// section also loads its subagent tool).
import { Schema } from 'cordis'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime from '@cordis-subagents/agent'
import * as modelOpenai from '@cordis-subagents/model-openai'
import SubagentService from '@cordis-subagents/subagents-service'
import * as spawn from '@cordis-subagents/provider-spawn'
import * as fork from '@cordis-subagents/provider-fork'
import * as subagentTool from '@cordis-subagents/subagent-tool'
import * as acp from '@cordis-subagents/provider-acp'
import * as a2a from '@cordis-subagents/provider-a2a'
import Checkpoints from '@cordis-subagents/checkpoints'
import SubagentConsole from '@cordis-subagents/console'
import * as koishiChat from '@cordis-subagents/koishi-chat'
import * as koishiConsole from '@cordis-subagents/koishi-console'
import { NAME_PATTERN } from '@cordis-subagents/shared'

/** A cordis plugin this package loads (a Service class or a namespace plugin); its `Config` checks a section. */
interface Component {
  Config: Schema
  [key: string]: unknown
}

/** One load of a component: which plugin, and the part of the section's value that is its config. */
export interface Load {
  label: string
  plugin: Component
  config: Record<string, unknown>
}

export interface Part {
  /** The section's key in the config. */
  key: string
  /** The section as the console shows it. */
  schema: Schema
  /** Whether an `enabled` switch turns the section off (then its default is given), or it always loads. */
  enabled?: boolean
  /** What the section's value loads, in order. */
  loads(value: Record<string, unknown>): Load[]
}

const plugin = (value: unknown) => value as Component

/** A component's object schema with some fields' defaults changed (e.g. the tool's provider: `spawn`). */
function withDefaults(schema: Schema, defaults: Record<string, unknown>): Schema {
  const dict: Record<string, Schema> = { ...schema.dict }
  for (const [key, value] of Object.entries(defaults)) dict[key] = dict[key].default(value)
  return Schema.object(dict)
}

const toolName = (value: string) => Schema.object({
  toolName: Schema.string().pattern(NAME_PATTERN).default(value).description('Name of the subagent tool this section also loads (bound to this provider).'),
})

/** The section's own keys taken out: what is left is the component's config. */
function without(value: Record<string, unknown>, ...keys: string[]): Record<string, unknown> {
  const rest = { ...value }
  for (const key of ['enabled', ...keys]) delete rest[key]
  return rest
}

/** A provider section that also loads a subagent tool bound to it (fork, acp, a2a). */
function providerWithTool(key: string, provider: Component, name: string, tool: string): Pick<Part, 'key' | 'loads'> {
  return {
    key,
    loads: (value) => {
      const config = without(value, 'toolName')
      const providerName = (config.name as string | undefined) ?? name
      return [
        { label: `${key} (${String(provider.name)})`, plugin: provider, config },
        { label: `${key} (subagent-tool)`, plugin: plugin(subagentTool), config: { provider: providerName, toolName: value.toolName ?? tool } },
      ]
    },
  }
}

export const PARTS: readonly Part[] = [
  {
    key: 'model',
    enabled: true,
    schema: modelOpenai.Config,
    loads: (value) => [{ label: 'model (model-openai)', plugin: plugin(modelOpenai), config: without(value) }],
  },
  {
    key: 'agents',
    schema: withDefaults(AgentRuntime.Config, { model: 'openai' }),
    loads: (value) => [{ label: 'agents (agent)', plugin: plugin(AgentRuntime), config: value }],
  },
  {
    key: 'tools',
    schema: ToolRegistry.Config,
    loads: (value) => [{ label: 'tools (tools)', plugin: plugin(ToolRegistry), config: value }],
  },
  {
    key: 'subagents',
    schema: SubagentService.Config,
    loads: (value) => [{ label: 'subagents (subagents-service)', plugin: plugin(SubagentService), config: value }],
  },
  {
    key: 'spawn',
    schema: spawn.Config,
    loads: (value) => [{ label: 'spawn (provider-spawn)', plugin: plugin(spawn), config: value }],
  },
  {
    key: 'subagent',
    schema: withDefaults(subagentTool.Config, { provider: 'spawn' }),
    loads: (value) => [{ label: 'subagent (subagent-tool)', plugin: plugin(subagentTool), config: value }],
  },
  { ...providerWithTool('fork', plugin(fork), 'fork', 'subagent_fork'), enabled: true, schema: Schema.intersect([fork.Config, toolName('subagent_fork')]) },
  { ...providerWithTool('acp', plugin(acp), 'acp', 'subagent_acp'), enabled: false, schema: Schema.intersect([acp.Config, toolName('subagent_acp')]) },
  { ...providerWithTool('a2a', plugin(a2a), 'a2a', 'subagent_a2a'), enabled: false, schema: Schema.intersect([a2a.Config, toolName('subagent_a2a')]) },
  {
    key: 'checkpoints',
    enabled: false,
    schema: Checkpoints.Config,
    loads: (value) => [{ label: 'checkpoints (checkpoints)', plugin: plugin(Checkpoints), config: without(value) }],
  },
  {
    key: 'chat',
    enabled: true,
    schema: koishiChat.Config,
    loads: (value) => [{ label: 'chat (koishi-chat)', plugin: plugin(koishiChat), config: without(value) }],
  },
  {
    key: 'consolePage',
    enabled: true,
    // Waits for Koishi's console (its `console` service): a bot without one just has no page.
    schema: koishiConsole.Config,
    loads: (value) => [{ label: 'consolePage (koishi-console)', plugin: plugin(koishiConsole), config: without(value) }],
  },
  {
    key: 'liveView',
    enabled: false,
    // The view's token is a credential: a password field in the form (the package's own schema leaves it plain).
    schema: Schema.object({ ...SubagentConsole.Config.dict, token: SubagentConsole.Config.dict!.token.role('secret') }),
    loads: (value) => [{ label: 'liveView (console)', plugin: plugin(SubagentConsole), config: without(value) }],
  },
]
