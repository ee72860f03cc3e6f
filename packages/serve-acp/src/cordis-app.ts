import type { Context } from 'cordis'
import { unawaitedStops } from '@cordis-subagents/shared'
import type { HostApp } from './host-app.js'

/** A cordis app driven by @cordisjs/loader reading `filename`. */
export async function cordisApp(filename: string): Promise<HostApp> {
  const [{ Context }, { default: Loader }] = await Promise.all([import('cordis'), import('@cordisjs/loader')])
  const ctx: Context = new Context()
  return {
    on: (event, listener) => { ctx.on(event as any, listener) },
    async start(errorCount, timeout) {
      ctx.plugin(Loader, { filename } as never)
      await ctx.start()
      // The loader must never write the operator's file back (it would on some entry changes).
      const file = (ctx.loader as unknown as { file?: { write(): void } }).file
      if (file) file.write = () => {}
      await settle(ctx, errorCount, timeout)
    },
    stop: () => stop(ctx),
  }
}

/** Waits until every enabled loader entry has applied (or failed, once errors stop coming), bounded by `timeout` (monotonic). */
async function settle(ctx: Context, errorCount: () => number, timeout: number): Promise<void> {
  const deadline = performance.now() + timeout
  let quiet = 0
  while (performance.now() < deadline) {
    await ctx.lifecycle.flush()
    const loader = ctx.loader as unknown as { entries(): Iterable<{ disabled?: boolean; fork?: unknown }> } | undefined
    const pending = loader ? [...loader.entries()].filter((entry) => !entry.disabled && !entry.fork).length : 0
    if (!pending) return
    // An entry that failed to import never gets a fork: once errors were logged and nothing moves for a while, stop waiting.
    quiet = errorCount() ? quiet + 1 : 0
    if (quiet > 20) return
    // A timer that holds the process: while entries still load, it may be all the event loop has left
    // (an unref'd one let the process exit with 13, its start's await unsettled, on a loaded machine).
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** Disables the loader's entries (last first), then stops the context, then waits for the store's own stop. */
async function stop(ctx: Context): Promise<void> {
  const stores = unawaitedStops(ctx)
  type Entry = { options: { disabled?: boolean }; refresh(): Promise<void> }
  const loader = ctx.loader as unknown as { entries(): Iterable<Entry> } | undefined
  for (const entry of loader ? [...loader.entries()].reverse() : []) {
    try {
      entry.options.disabled = true
      await entry.refresh()
    } catch {}
  }
  await ctx.lifecycle.flush().catch(() => {})
  // The loader's `inject` sub-plugin reads `ctx.loader` in a global service hook, which throws once
  // the loader is gone: dispose it before the context.
  for (const runtime of [...ctx.registry.values()]) {
    const plugin = runtime.plugin as { name?: string; apply?: unknown } | undefined
    if (plugin?.name === 'inject' && String(plugin.apply).includes('loader/entry-check')) runtime.dispose()
  }
  await ctx.stop().catch(() => {})
  await stores()
}
