// The one live load of a service per app (or per isolation realm): what refuses a second load of a serving plugin
// (serve-a2a, serve-mcp, the console), whose second port would otherwise never bind and whose first would outlive its entry.
import { Context } from 'cordis'

/** The live load of each service of an app, by the service's slot (its name in an isolation realm), with its label. */
const loads = new WeakMap<object, Map<symbol, string>>()

/**
 * Takes the slot of service `name` in `ctx`'s app for a load labelled `label` (what it serves, for the message that
 * refuses another). An entry with `isolate: { <name>: true }` has a slot of its own. Returns the release (call it when
 * the load stops), or the label of the live load that holds the slot.
 */
export function takeServiceSlot(ctx: Context, name: string, label: string): { release: () => void } | { holder: string } {
  ctx.provide(name)
  const slot = ctx[Context.isolate][name]
  let held = loads.get(ctx.root)
  if (!held) loads.set(ctx.root, held = new Map())
  const holder = held.get(slot)
  if (holder !== undefined) return { holder }
  const mine = held
  mine.set(slot, label)
  let released = false
  return {
    release: () => {
      if (released) return
      released = true
      mine.delete(slot)
    },
  }
}

/** What a refused second load says: which load is live, and what to do instead. */
export function duplicateLoadMessage(plugin: string, service: string, holder: string): string {
  return `${plugin} is loaded twice in this app: a load serving ${holder} is live, and an app has one ${service}. Remove or `
    + `disable this entry (it stays failed until loaded again); to serve a second port, give it a ${service} of its own with `
    + `\`isolate: { ${service}: true }\` in cordis.yml.`
}
