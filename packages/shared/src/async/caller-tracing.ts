import { type Context, symbols } from 'cordis'

/**
 * The service object behind cordis' caller-tracing proxy. Every access through `ctx.<service>`
 * builds a shadow context and wraps arguments (tens of microseconds); hot paths that do not bind
 * anything to the caller's scope look the service up once, at plugin apply, and call it directly.
 * The plugin must `inject` the service, so a replaced service restarts the plugin and the cached
 * reference never goes stale. Never call scope-bound methods (`register`, `reserve`,
 * `registerModel`) through it: they would bind to the service's own scope, not the caller's.
 */
export function withoutCallerTracing<T extends object>(service: T): T {
  return ((service as Record<symbol, unknown>)[symbols.original] as T | undefined) ?? service
}

/**
 * `ctx[name]` for a plugin that declares `name` in its `inject`: the same traced service (its
 * scope-bound methods, `register` and the like, bind to `ctx`'s scope), read through `ctx.reflect`.
 * A `ctx.<service>` read builds an `Error` and runs cordis' check for an undeclared service, which
 * walks the plugin's inject list through two event dispatches (≈ 40 µs, a third of a provider
 * reload); this skips both, so it also skips cordis' warning for a service the plugin forgot to
 * declare: declare it (the plugin then waits for it, and restarts when it is replaced). A service
 * that is not loaded throws here.
 */
export function injected<K extends keyof Context & string>(ctx: Context, name: K): NonNullable<Context[K]> {
  const service = ctx.reflect.get(name) as Context[K] | undefined
  if (service === undefined || service === null) throw new Error(`cordis service "${name}" is not available: declare it in the plugin's inject`)
  return service as NonNullable<Context[K]>
}
