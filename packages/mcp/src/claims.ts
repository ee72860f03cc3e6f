import type { Context } from 'cordis'
import { takeAppSlot } from '@cordis-subagents/shared'
import { McpError } from './errors.js'

/**
 * Claims server `name` for the load of `ctx` in its app (shared's one-load rule, `takeAppSlot`): two loads with one name
 * would register the same `name__tool` tools and one `ctx.mcp` entry, so the second is refused before it starts
 * anything. The name is freed when the load is disposed (an unload, or an edit that applies the entry again, whose new
 * apply then claims it anew). Throws `MCP_DUPLICATE_NAME` when another load holds it.
 */
export function claimServerName(ctx: Context, name: string): void {
  const mine = entryId(ctx)
  const claim = takeAppSlot(ctx, `mcp server ${name}`, mine ?? '')
  if ('holder' in claim) {
    const which = claim.holder ? ` (the entry ${JSON.stringify(claim.holder)})` : ''
    throw new McpError('MCP_DUPLICATE_NAME', `mcp: server "${name}"${mine ? ` (the entry ${JSON.stringify(mine)})` : ''}: another `
      + `@cordis-subagents/mcp load${which} already uses this name, so this load was not started (its tools, ${name}__*, `
      + 'and its ctx.mcp entry would clash with that load\'s). Give each load its own name.')
  }
  try {
    ctx.effect(() => claim.release)
  } catch (error) {
    claim.release()
    throw error
  }
}

/** The id of the loader entry that loaded `ctx`'s plugin (the loader sets `scope.entry`), if any. */
function entryId(ctx: Context): string | undefined {
  const id = (ctx.scope as { entry?: { id?: unknown } }).entry?.id
  return typeof id === 'string' ? id : undefined
}
