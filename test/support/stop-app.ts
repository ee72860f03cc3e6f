// A clean stop of a test's app: cordis does not await a service's stop, and the checkpoints store's
// (its last writes, its writer thread, the run log) goes on after `ctx.stop()` resolves.
import type { Context } from 'cordis'
import { unawaitedStops } from '@cordis-subagents/shared'

/** `ctx.stop()`, then the own stop of the app's checkpoints store if it has one (what a test that removes the database next needs). */
export async function stopApp(ctx: Context): Promise<void> {
  const stores = unawaitedStops(ctx)
  await ctx.stop()
  await stores()
}
