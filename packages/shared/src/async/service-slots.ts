// The one live load per app of what must not be loaded twice: a service (or its isolation realm's), whose second port would
// otherwise never bind and whose first would outlive its entry (serve-a2a, serve-mcp, the console); an MCP server's name.
import { Context } from 'cordis'

/** The live load of each slot of an app (a service's slot symbol, or a name), with its label. */
const loads = new WeakMap<object, Map<symbol | string, string>>()

/** A slot taken (call `release` when the load stops), or the label of the live load that holds it. */
export type AppSlot = { release: () => void } | { holder: string }

/**
 * Takes slot `key` of `ctx`'s app (its root) for a load labelled `label` (for the message that refuses another): the
 * one rule of a load that must be the only one of its kind in an app. Returns the release, or the holder's label.
 */
export function takeAppSlot(ctx: Context, key: symbol | string, label: string): AppSlot {
  let held = loads.get(ctx.root)
  if (!held) loads.set(ctx.root, held = new Map())
  const holder = held.get(key)
  if (holder !== undefined) return { holder }
  const mine = held
  mine.set(key, label)
  let released = false
  return {
    release: () => {
      if (released) return
      released = true
      mine.delete(key)
    },
  }
}

/**
 * Takes the slot of service `name` in `ctx`'s app for a load labelled `label` (what it serves). An entry with
 * `isolate: { <name>: true }` has a slot of its own (`takeAppSlot` keyed by the service's slot).
 */
export function takeServiceSlot(ctx: Context, name: string, label: string): AppSlot {
  ctx.provide(name)
  return takeAppSlot(ctx, ctx[Context.isolate][name], label)
}

/** What a refused second load says: which load is live, and what to do instead. */
export function duplicateLoadMessage(plugin: string, service: string, holder: string): string {
  return `${plugin} is loaded twice in this app: a load serving ${holder} is live, and an app has one ${service}. Remove or `
    + `disable this entry (it stays failed until loaded again); to serve a second port, give it a ${service} of its own with `
    + `\`isolate: { ${service}: true }\` in cordis.yml.`
}
