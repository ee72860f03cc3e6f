import type { Context } from 'cordis'
import type { Limits } from './config.js'

/** What the store's parts share: the database, the bounds, and who this host start is. */
export interface StoreContext {
  ctx: Context
  limits: Limits
  /** The configured host name (stable across restarts). */
  host: string
  /** This start of the host (a fresh UUID each start). */
  instance: string
}

export function database(store: StoreContext) {
  return store.ctx.database
}
