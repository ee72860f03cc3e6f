import { Context } from 'cordis'
import { z } from 'zod'
import ToolRegistry, { type Tool, type ToolExecContext, type ToolInputSchema } from '@cordis-subagents/tools'

/** A started root context with `ctx.tools` provided, plus every `internal/error` it reports. */
export async function setup(): Promise<{ ctx: Context; errors: unknown[] }> {
  const ctx = new Context()
  const errors: unknown[] = []
  ctx.on('internal/error', (error) => { errors.push(error) })
  ctx.plugin(ToolRegistry)
  await ctx.start()
  return { ctx, errors }
}

export const textInput = z.object({ text: z.string() })

export function makeTool(name: string, overrides: Partial<Tool<ToolInputSchema>> = {}): Tool<typeof textInput> {
  return {
    name,
    description: `The ${name} tool.`,
    input: textInput,
    execute: ({ text }) => ({ content: `${name}:${text}` }),
    ...overrides,
  } as Tool<typeof textInput>
}

export function makeExec(overrides: Partial<ToolExecContext> = {}): ToolExecContext {
  return {
    signal: new AbortController().signal,
    agent: { id: 'agent-1', depth: 0 },
    toolCallId: 'call-1',
    ...overrides,
  }
}

/** A fresh (so never de-duplicated by cordis) plugin that registers the given tools in its own scope. */
export function registering(...tools: Tool<any>[]) {
  return plugin((ctx) => {
    for (const tool of tools) ctx.tools.register(tool)
  })
}

/** A fresh function plugin that declares `inject: ['tools']` (as every user of ctx.tools should). */
export function plugin<C = any>(apply: (ctx: Context, config: C) => void) {
  return Object.assign((ctx: Context, config: C) => apply(ctx, config), { inject: ['tools'] })
}

/** `fork.runtime.status` of a plugin whose apply threw (cordis `ScopeStatus.FAILED`). */
export const FAILED = 3

export function names(ctx: Context): string[] {
  return ctx.tools.list().map((spec) => spec.name).sort()
}
