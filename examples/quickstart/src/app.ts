import { fileURLToPath } from 'node:url'
import { Context } from 'cordis'
import Loader from '@cordisjs/loader'
import { stopLoaderApp } from '@cordis-subagents/config-watch'
import type {} from '@cordis-subagents/tools'
import type {} from '@cordis-subagents/agent'
import type {} from '@cordis-subagents/subagents-service'

/** The cordis.yml shipped with the quick start (next to `src/` and `lib/`). */
export const DEFAULT_CONFIG = fileURLToPath(new URL('../cordis.yml', import.meta.url))

export interface App {
  ctx: Context
  loader: Loader
  /** Stops every entry, then the context. Idempotent. */
  stop(): Promise<void>
}

/**
 * Starts a cordis Context driven by `@cordisjs/loader` reading `filename` (a cordis.yml), and
 * waits until every enabled entry has been applied (or `timeout` ms passed).
 * Plugin names resolve from the loader's own location in node_modules, so entries use package
 * names (`@cordis-subagents/tools`), not relative paths.
 */
export async function startApp(filename = DEFAULT_CONFIG, options: { timeout?: number } = {}): Promise<App> {
  const ctx = new Context()
  ctx.plugin(Loader, { filename } as any)
  await ctx.start()
  const loader = ctx.loader as Loader
  await settle(ctx, options.timeout ?? 10_000)
  await providersReady(ctx, options.timeout ?? 20_000)
  let stopping: Promise<void> | undefined
  return {
    ctx,
    loader,
    stop: () => (stopping ??= stopApp(ctx)),
  }
}

/** Waits until every enabled loader entry has a fork and the lifecycle is quiet. */
export async function settle(ctx: Context, timeout = 10_000): Promise<void> {
  const deadline = Date.now() + timeout
  while (true) {
    await ctx.lifecycle.flush()
    const loader = ctx.loader as Loader | undefined
    const pending = loader ? [...loader.entries()].filter((entry) => !entry.disabled && !entry.fork) : []
    if (!pending.length || Date.now() > deadline) return
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/**
 * Waits (bounded) until the provider of every enabled subagent-tool entry is registered. An entry
 * can have its fork before its provider exists: provider-a2a reads its agent card first, and the
 * `remote` entry waits for the A2A server process. Without this, a first turn on a loaded machine
 * could run before `subagent_remote` was mounted. A provider that never comes is left out (its
 * plugin logs why), as before.
 */
async function providersReady(ctx: Context, timeout: number): Promise<void> {
  const loader = ctx.loader as Loader | undefined
  const subagents = ctx.get('subagents')
  if (!loader || !subagents) return
  const names = new Set<string>()
  for (const entry of loader.entries()) {
    const options = entry.options as { name?: string; config?: { provider?: unknown } }
    if (entry.disabled || options.name !== '@cordis-subagents/subagent-tool') continue
    if (typeof options.config?.provider === 'string') names.add(options.config.provider)
  }
  await Promise.all([...names].map((name) => subagents.ready(name, { timeout }).catch(() => {})))
}

/** The loader's entries, then the context, with cordis.yml left as it is (see stopLoaderApp). */
async function stopApp(ctx: Context): Promise<void> {
  try {
    await stopLoaderApp(ctx)
  } catch {}
}
