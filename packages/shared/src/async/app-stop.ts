import type { Context } from 'cordis'

/**
 * Services whose own stop goes on after `ctx.stop()` resolves (cordis 3 does not await a service's
 * stop) and that say when it is done with `stopped()`: the checkpoints store (its last writes, its
 * writer thread, its run log).
 */
const SELF_STOPPING = ['checkpoints']

/** Taken before a stop: resolves once the own stop of each such service of `ctx` is done. */
export function unawaitedStops(ctx: Context): () => Promise<void> {
  const services = SELF_STOPPING.map((name) => ctx.get(name as never) as { stopped?(): Promise<void> } | undefined)
  return async () => {
    await Promise.all(services.map((service) => service?.stopped?.()))
  }
}
