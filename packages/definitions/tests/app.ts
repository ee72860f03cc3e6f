import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context, type ForkScope } from 'cordis'
import AgentDefinitions from '@cordis-subagents/definitions'

/** A fork's status (cordis's ScopeStatus, a const enum): its apply still runs, it is up, it failed. */
export const LOADING = 1
export const ACTIVE = 2
export const FAILED = 3

export interface DefinitionsApp {
  ctx: Context
  dir: string
  errors: unknown[]
  /** Loads a plugin (as the loader would) and lets it settle. */
  load(plugin: unknown, config: unknown): Promise<ForkScope>
  stop(): Promise<void>
}

/** A started Context with ctx.agentDefinitions, `baseDir` a fresh temporary directory. */
export async function startApp(): Promise<DefinitionsApp> {
  const dir = mkdtempSync(join(tmpdir(), 'definitions-'))
  const ctx = new Context()
  ctx.baseDir = dir
  const errors: unknown[] = []
  ctx.on('internal/error', (error) => { errors.push(error) })
  ctx.plugin(AgentDefinitions)
  await ctx.start()
  await ctx.lifecycle.flush()
  return {
    ctx,
    dir,
    errors,
    async load(plugin, config) {
      const fork = ctx.plugin(plugin as never, config as never)
      await ctx.lifecycle.flush()
      return fork
    },
    async stop() {
      await ctx.stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** The code of the error a failed load reported. */
export function codeOf(errors: unknown[]): string | undefined {
  const error = errors.at(-1) as { code?: string; cause?: { code?: string } } | undefined
  return error?.code ?? error?.cause?.code
}
