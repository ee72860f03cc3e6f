// An agent definition as a tool: the outer run gets exactly one result, the final text plus { agent, turns, totalTokens }.
import type { Context } from 'cordis'
import { z } from 'zod'
import type { AgentDefinitions } from '@cordis-subagents/definitions'
import { type BudgetBreach, emptyWork, isName, NAME_RULE, totalTokens, type Usage } from '@cordis-subagents/shared'
import { statusOf, type SubagentStopReason } from '@cordis-subagents/subagents-service'
import type { Tool, ToolResult } from '@cordis-subagents/tools'
import { runDelegation } from '../call.js'
import type { InFlight } from '../call-types.js'
import { DEFAULT_MAX_OUTPUT_BYTES } from '../config.js'
import { describePrompt } from '../wording.js'
import { memberOptions } from './member.js'
import { SubagentToolError } from '../errors.js'

export interface AsToolOptions {
  /** The tool's name (default: the agent's name). */
  name?: string
  /** Milliseconds before the agent's run is cancelled (default 30 min; 0: none). */
  timeout?: number
  /** Largest answer (UTF-8 bytes) returned; longer is cut with a note (default 64 KiB). */
  maxOutputBytes?: number
}

const input = z.strictObject({
  prompt: z.string().min(1, { message: 'The prompt must not be empty.', abort: true })
    .refine((text) => text.trim().length > 0, 'The prompt must not be only whitespace.').describe(describePrompt({ inheritsParentContext: false })),
})

/**
 * Agent `agent` of `ctx.agentDefinitions` as a tool (register it with `ctx.tools.register`): the
 * model gives a `prompt`; the agent runs once on its definition's provider, soul, uses, budget and
 * model; the result is its final text, with `metadata { agent, turns, totalTokens, status, stopReason }`
 * (`turns`: its model calls, children's included) and the usage for roll-up. Calls in flight are
 * cancelled when `ctx` is disposed. Throws when the agent is not defined.
 */
export function asTool(ctx: Context, agent: string, options: AsToolOptions = {}): Tool<typeof input> {
  const definitions = ctx.get('agentDefinitions') as AgentDefinitions | undefined
  const definition = definitions?.get(agent)
  if (!definitions || !definition) {
    throw new SubagentToolError('UNKNOWN_AGENT',
      `asTool: agent "${agent}" is not defined (load @cordis-subagents/definitions and define it first).`)
  }
  const name = options.name ?? agent
  if (!isName(name)) {
    throw new SubagentToolError('INVALID_OPTIONS', `asTool: options.name ${JSON.stringify(name)} is not a tool name (${NAME_RULE}).`)
  }
  const inFlight = new Set<InFlight>()
  ctx.on('dispose', () => { for (const call of [...inFlight]) call.cancel('unload') })
  const base = { timeout: options.timeout ?? 30 * 60_000, maxOutputBytes: options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES }
  return {
    name,
    description: definition.does,
    input,
    async execute({ prompt }, exec): Promise<ToolResult> {
      // The definition as it is now: a reload since the tool was made applies to the next call.
      const current = definitions.get(agent)
      if (!current) return { isError: true, content: `Agent "${agent}" is no longer defined.` }
      const options = memberOptions(base, current, ctx.subagents, definitions)
      const result = await runDelegation(ctx.subagents, options, { description: agent, prompt }, exec, inFlight)
      const metadata = (result.metadata ?? {}) as { stopReason?: SubagentStopReason; usage?: Usage; budget?: BudgetBreach }
      const stopReason = metadata.stopReason ?? 'error'
      const { status, limit } = statusOf({ stopReason, ...metadata.budget ? { budget: metadata.budget } : {} })
      result.metadata = {
        agent,
        turns: (result.work ?? emptyWork()).steps,
        totalTokens: metadata.usage ? totalTokens(metadata.usage) : 0,
        status,
        ...limit ? { limit } : {},
        stopReason,
      }
      return result
    },
  }
}
