import { NAME_PATTERN } from '@cordis-subagents/shared'

/** Between the server's name and its tool's: `files__read_file`. */
const SEPARATOR = '__'

/**
 * Our name for a server's tool, or a reason it has none. Characters outside our rule (`.`, `/`,
 * spaces) become `_`; the model sees our name, the server gets its own. A name still too long is
 * skipped (truncating could merge two tools).
 */
export function mountedName(server: string, tool: string): { name: string } | { skip: string } {
  if (typeof tool !== 'string' || !tool) return { skip: 'it has no name' }
  const name = `${server}${SEPARATOR}${tool.replace(/[^A-Za-z0-9_-]/g, '_')}`
  if (!NAME_PATTERN.test(name)) return { skip: `"${name}" is longer than 64 characters` }
  return { name }
}
