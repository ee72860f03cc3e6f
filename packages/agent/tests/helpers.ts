import { Context } from 'cordis'
import { z } from 'zod'
import ToolRegistry, { type Tool } from '@cordis-subagents/tools'
import AgentRuntime, { type ChatModel, type Message } from '@cordis-subagents/agent'
import { type Deferred, deferred, tick } from '../../../test/support/async.js'

export { type Deferred, deferred, tick }

export const FAILED = 3

export interface Setup {
  ctx: Context
  errors: unknown[]
  warnings: unknown[]
}

/**
 * A started root context with the real `ctx.tools` and `ctx.agents` plugins, collecting every
 * `internal/error` and `internal/warning` it reports.
 */
export async function setup(config: AgentRuntime.Config = {}): Promise<Setup> {
  const ctx = new Context()
  const errors: unknown[] = []
  const warnings: unknown[] = []
  ctx.on('internal/error', (error) => { errors.push(error) })
  ctx.on('internal/warning', (warning) => { warnings.push(warning) })
  ctx.plugin(ToolRegistry)
  ctx.plugin(AgentRuntime, config)
  await ctx.start()
  await ctx.lifecycle.flush()
  return { ctx, errors, warnings }
}

/** A fresh plugin (never de-duplicated by cordis) that registers a model in its own scope. */
export function modelPlugin(name: string, model: ChatModel) {
  return {
    name: `model-${name}`,
    inject: ['agents'],
    apply(ctx: Context) {
      ctx.agents.registerModel(name, model)
    },
  }
}

/** A fresh plugin that registers the given tools in its own scope. */
export function toolPlugin(...tools: Tool<any>[]) {
  return {
    name: 'test-tools',
    inject: ['tools'],
    apply(ctx: Context) {
      for (const tool of tools) ctx.tools.register(tool)
    },
  }
}

export { makeTool } from '../../tools/tests/helpers.js'

/** A tool that answers `echo <text>`. */
export const echo: Tool<any> = {
  name: 'echo', description: 'echoes', input: z.object({ text: z.string() }),
  execute: ({ text }: { text: string }) => ({ content: `echo ${text}` }),
}

/**
 * True when every assistant tool call has exactly one tool result after it, and no tool result
 * answers an unknown call: the transcript is a valid seed for any chat API.
 */
export function isBalanced(messages: readonly Message[]): boolean {
  const open = new Set<string>()
  // Per assistant message: a model may reuse call ids across steps.
  let answered = new Set<string>()
  for (const message of messages) {
    if (message.role === 'assistant') {
      if (open.size) return false // a new assistant message before the previous calls were answered
      answered = new Set<string>()
      for (const call of message.toolCalls ?? []) open.add(call.id)
    } else if (message.role === 'tool') {
      if (!open.has(message.toolCallId) || answered.has(message.toolCallId)) return false
      open.delete(message.toolCallId)
      answered.add(message.toolCallId)
    } else if (open.size) {
      return false
    }
  }
  return open.size === 0
}

/** A run's `work` with only own model calls and tool calls (no delegations). */
export function work(steps: number, toolCalls: number, delegations = 0) {
  return {
    own: { steps, toolCalls, delegations },
    delegated: { steps: 0, toolCalls: 0, delegations: 0 },
  }
}
