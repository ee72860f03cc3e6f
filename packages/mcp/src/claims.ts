import type { Context } from 'cordis'
import { McpError } from './errors.js'

/** Who holds a server name: one client load (named by its loader entry id, when it has one). */
interface Claim {
  readonly holder?: string
}

/**
 * The server names the client loads of one app (its root context) hold. Two loads with one name would register the
 * same `name__tool` tools and one `ctx.mcp` entry, so the second is refused before it starts anything.
 */
const claims = new WeakMap<Context, Map<string, Claim>>()

/**
 * Claims server `name` for the load of `ctx`, in its scope: the name is freed when the load is disposed (an unload,
 * or an edit that applies the entry again, whose new apply then claims it anew). Throws `MCP_DUPLICATE_NAME` when
 * another load holds it.
 */
export function claimServerName(ctx: Context, name: string): void {
  let names = claims.get(ctx.root)
  if (!names) claims.set(ctx.root, names = new Map())
  const held = names
  const other = held.get(name)
  if (other) {
    const which = other.holder ? ` (the entry ${JSON.stringify(other.holder)})` : ''
    const mine = entryId(ctx)
    throw new McpError('MCP_DUPLICATE_NAME', `mcp: server "${name}"${mine ? ` (the entry ${JSON.stringify(mine)})` : ''}: another `
      + `@cordis-subagents/mcp load${which} already uses this name, so this load was not started (its tools, ${name}__*, `
      + 'and its ctx.mcp entry would clash with that load\'s). Give each load its own name.')
  }
  const claim: Claim = { holder: entryId(ctx) }
  ctx.effect(() => {
    held.set(name, claim)
    return () => {
      if (held.get(name) === claim) held.delete(name)
    }
  })
}

/** The id of the loader entry that loaded `ctx`'s plugin (the loader sets `scope.entry`), if any. */
function entryId(ctx: Context): string | undefined {
  const id = (ctx.scope as { entry?: { id?: unknown } }).entry?.id
  return typeof id === 'string' ? id : undefined
}
