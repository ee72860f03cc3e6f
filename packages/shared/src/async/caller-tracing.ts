import { symbols } from 'cordis'

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
