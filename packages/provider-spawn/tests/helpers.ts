import type { Context } from 'cordis'
import { z } from 'zod'
import type { Tool, ToolExecContext } from '@cordis-subagents/tools'
import {
  type Agent, type AgentRuntime, type ChatModel, type GenerateRequest, type Message, ScriptedModel, type ScriptedResponse,
} from '@cordis-subagents/agent'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import type { Config as SubagentConfig, SubagentOutcome, SubagentRunInfo, SubagentUpdate } from '@cordis-subagents/subagents-service'
import { deferred, tick, until } from '../../../test/support/async.js'
import { startHost } from '../../../test/support/host.js'

export { deferred, tick, until }

/** `fork.status` of a plugin whose apply threw (cordis `ScopeStatus.FAILED`). */
export const FAILED = 3

export interface Harness {
  ctx: Context
  errors: unknown[]
  starts: SubagentRunInfo[]
  updates: Array<{ info: SubagentRunInfo; update: SubagentUpdate }>
  ends: Array<{ info: SubagentRunInfo; result: SubagentOutcome }>
}

export interface SetupOptions {
  /** Models registered by a plugin of their own; the first one is the runtime's default. */
  models: Record<string, ChatModel>
  /** Tools registered by a plugin of their own. */
  tools?: Tool<any>[]
  agents?: AgentRuntime.Config
  /** Config of the subagents service (its deployment limits). */
  subagents?: Partial<SubagentConfig>
}

/**
 * A started root context with the real `ctx.tools`, `ctx.agents` and `ctx.subagents` services,
 * the given models and tools, and every `internal/error` and `subagent/*` run event recorded.
 * Providers and subagent tools are loaded by each test.
 */
export async function setup(options: SetupOptions): Promise<Harness> {
  const recorded: Omit<Harness, 'ctx' | 'errors'> = { starts: [], updates: [], ends: [] }
  const host = await startHost({
    agents: { model: Object.keys(options.models)[0], ...options.agents },
    subagents: options.subagents,
    before(ctx) {
      ctx.on('subagent/start', (info) => { recorded.starts.push(info) })
      ctx.on('subagent/update', (info, update) => { recorded.updates.push({ info, update }) })
      ctx.on('subagent/end', (info, result) => { recorded.ends.push({ info, result }) })
      ctx.plugin({
        name: 'test-models',
        inject: ['agents'],
        apply(ctx: Context) {
          for (const [name, model] of Object.entries(options.models)) ctx.agents.registerModel(name, model)
        },
      })
      const tools = options.tools ?? []
      if (tools.length) {
        ctx.plugin({
          name: 'test-tools',
          inject: ['tools'],
          apply(ctx: Context) {
            for (const tool of tools) ctx.tools.register(tool)
          },
        })
      }
    },
  })
  return { ctx: host.ctx, errors: host.errors, ...recorded }
}

/** Options of one `subagent-tool` load; only `provider` is required (the rest have defaults). */
export type ToolOptions = Pick<SubagentTool.Config, 'provider'> & Partial<SubagentTool.Config>

/**
 * Loads the real `subagent-tool` plugin (its `Config` schema fills in the defaults). The cast only
 * keeps these tests independent of how that plugin types its config input.
 */
export function loadTool(ctx: Context, config: ToolOptions) {
  return ctx.plugin(SubagentTool, config as SubagentTool.Config)
}

/** What a routed script sees of one model call. */
export interface Call {
  request: GenerateRequest
  /** The user message that opened the turn: the task of a root agent, the prompt of a child. */
  prompt: string
  /** 0 for the first model call of the turn, then 1, 2, ... */
  step: number
  /** The tool results of the previous step (empty on step 0). */
  results: Extract<Message, { role: 'tool' }>[]
}

export type Route = (call: Call) => ScriptedResponse | Promise<ScriptedResponse>

/**
 * A `ScriptedModel` that answers by the prompt of the turn, so one model can play the parent and
 * every child: `routes[prompt]`, else `fallback`. An unrouted prompt fails the model call.
 */
export function routed(routes: Record<string, Route>, fallback?: Route): ScriptedModel {
  return new ScriptedModel((request) => {
    const call = describeCall(request)
    const route = Object.hasOwn(routes, call.prompt) ? routes[call.prompt] : fallback
    if (!route) throw new Error(`test model: no route for the prompt ${JSON.stringify(call.prompt)}`)
    return route(call)
  })
}

function describeCall(request: GenerateRequest): Call {
  const messages = request.messages
  let start = messages.length - 1
  while (start >= 0 && messages[start].role !== 'user') start--
  const turn = messages.slice(start + 1)
  const step = turn.filter((message) => message.role === 'assistant').length
  const results: Call['results'] = []
  for (let i = turn.length - 1; i >= 0 && turn[i].role === 'tool'; i--) results.unshift(turn[i] as Call['results'][number])
  return { request, prompt: start >= 0 ? (messages[start] as { content: string }).content : '', step, results }
}

/** A model tool call of the `subagent` tool (or another delegation tool). */
export function delegation(prompt: string, options: { id?: string; description?: string; tool?: string } = {}) {
  return {
    ...(options.id ? { id: options.id } : {}),
    name: options.tool ?? 'subagent',
    input: { description: options.description ?? `task: ${prompt}`, prompt },
  }
}

/** A tool that answers `probe` and records the agent that called it. */
export function probeTool(seen: Agent[], name = 'probe'): Tool<z.ZodObject> {
  return {
    name,
    description: `Reports who called it (${name}).`,
    input: z.object({}),
    execute: (_input, exec) => {
      const agent = exec.agent as Agent
      seen.push(agent)
      return { content: `${name}: ${agent.id} at depth ${agent.depth}` }
    },
  }
}

/** A tool that records every execution; it must never run when hidden. */
export function countingTool(name: string, calls: ToolExecContext[]): Tool<z.ZodObject> {
  return {
    name,
    description: `The ${name} tool.`,
    input: z.object({}),
    execute: (_input, exec) => {
      calls.push(exec)
      return { content: `${name} ran` }
    },
  }
}

/** A promise that never settles on its own (a model or tool hanging until it is aborted). */
export function hang<T>(): Promise<T> {
  return new Promise<T>(() => {})
}

/** The number in an agent id (`label-N`): the runtime's creation counter. */
function serial(agent: Agent): number {
  return Number(agent.id.slice(agent.id.lastIndexOf('-') + 1))
}

/** How many agents the runtime has created so far (makes, and counts, one probe agent). */
export function agentsCreated(ctx: Context): number {
  return serial(ctx.agents.create({ label: 'count' }))
}

export function toolMessages(messages: readonly Message[]) {
  return messages.filter((message): message is Extract<Message, { role: 'tool' }> => message.role === 'tool')
}
