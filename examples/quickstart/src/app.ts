import { fileURLToPath } from 'node:url'
import { Context } from 'cordis'
import Loader from '@cordisjs/loader'
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

async function stopApp(ctx: Context): Promise<void> {
  const loader = ctx.loader as Loader | undefined
  // Disable the entries first (in reverse order, so tools go before the services they use).
  // Disposing an entry's fork directly would make the loader persist `disabled: true` into the
  // config file, and `ctx.stop()` alone trips the loader's service hooks once `ctx.loader` is gone.
  if (loader) {
    for (const entry of [...loader.entries()].reverse()) {
      try {
        entry.options.disabled = true
        await entry.refresh()
      } catch {}
    }
  }
  await ctx.lifecycle.flush().catch(() => {})
  if (loader?.file) clearTimeout(loader.file.writeTask)
  // The loader's `inject` sub-plugin reads `ctx.loader` in a global service hook; once the loader
  // service is gone that hook throws (loader.js:568). Dispose that sub-plugin before the context.
  for (const runtime of [...ctx.registry.values()]) {
    const plugin = runtime.plugin as { name?: string; apply?: (...args: never[]) => unknown } | undefined
    if (plugin?.name === 'inject' && String(plugin.apply).includes('loader/entry-check')) runtime.dispose()
  }
  try {
    await ctx.stop()
  } catch {}
}
