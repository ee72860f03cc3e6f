// Stopping a @cordisjs/loader 0.13 app. A bare `ctx.stop()` on such an app logs a TypeError from
// the loader (its `inject` helper reads `ctx.loader` in a global service hook after the loader
// service is gone), and the loader's own teardown skips every other entry and then writes what
// is left back into the config file: entries vanish from cordis.yml.
import type { Context } from 'cordis'
import type {} from '@cordisjs/loader'
import { unawaitedStops } from '@cordis-subagents/shared'
import { isCordisLoader, type LoaderFileView, type LoaderView } from './loader-view.js'

/**
 * Stops a context that runs `@cordisjs/loader`: the loader's entries first (newest first, so a
 * tool goes before the service it uses), with the config file left exactly as it is, then the
 * loader's helper plugins, then the context. A write the loader had scheduled before (after a
 * `ctx.loader.update()`) is finished first. Without a loader it is `ctx.stop()`. Either way it then
 * waits for what `ctx.stop()` does not: the own stop of a checkpoints store (its last writes, its
 * writer thread), shared's `unawaitedStops`.
 */
export async function stopLoaderApp(ctx: Context): Promise<void> {
  const stores = unawaitedStops(ctx)
  const loader = ctx.get('loader')
  if (!isCordisLoader(loader)) {
    await ctx.stop()
    return stores()
  }
  await finishWrites(ctx, loader)
  // Every entry reads as "not ready" while this runs: the loader then stops it without marking it
  // `disabled: true` and without writing the file.
  const hold = ctx.on('loader/entry-check', () => true)
  try {
    for (const entry of [...loader.entries()].reverse()) {
      await entry.refresh().catch((error: unknown) => ctx.emit(ctx, 'internal/error', error))
    }
    await ctx.lifecycle.flush()
    // The loader's own helper plugins (`inject`, `isolate`) go before the loader service does.
    for (const runtime of [...ctx.registry.values()]) {
      for (const fork of [...runtime.children]) if (fork.parent === loader.ctx) fork.dispose()
    }
  } finally {
    hold()
  }
  await ctx.stop()
  // Nothing scheduled during the teardown may reach the file: it would hold a half-removed list.
  for (const file of Object.values(loader.files)) clearTimeout(file.writeTask)
  await stores()
}

/** Runs a pending write-back now and waits for it, so a stop right after an update keeps it. */
async function finishWrites(ctx: Context, loader: LoaderView) {
  for (const file of Object.values(loader.files) as Array<LoaderFileView & { _write?: (data: unknown) => Promise<void> }>) {
    if (!file.writeTask) continue
    const tree = file.trees[0]
    if (typeof file._write !== 'function' || file.trees.length !== 1 || !tree) {
      // Not the loader this was written against: let its own timer run first.
      await new Promise((resolve) => setTimeout(resolve, 0))
      continue
    }
    clearTimeout(file.writeTask)
    file.writeTask = undefined
    await file._write(tree.root.data).catch((error: unknown) => ctx.emit(ctx, 'internal/error', error))
  }
}
