import { NAME_PATTERN } from '@cordis-subagents/shared'

/** Between the server's name and its tool's: `files__read_file`. */
const SEPARATOR = '__'
/** The longest name of ours (`NAME_PATTERN`). */
const MAX_NAME_CHARS = 64

/** Why a server's tool gets no name of ours: it has none, or ours would be over 64 characters. */
export type NameSkip = 'unnamed' | 'too-long'

/**
 * Our name for a server's tool, or why it has none. Characters outside our rule (`.`, `/`,
 * spaces) become `_`; the model sees our name, the server gets its own. A name still too long is
 * skipped (truncating could merge two tools). Sanitizing keeps the length (one `_` per UTF-16 code
 * unit), so a name too long is skipped on its length alone: no copy of it is made, whatever its size,
 * and the reason names a kind, never the name (the caller quotes a cut head of it).
 */
export function mountedName(server: string, tool: unknown): { name: string } | { skip: NameSkip } {
  if (typeof tool !== 'string' || !tool) return { skip: 'unnamed' }
  if (server.length + SEPARATOR.length + tool.length > MAX_NAME_CHARS) return { skip: 'too-long' }
  const name = `${server}${SEPARATOR}${tool.replace(/[^A-Za-z0-9_-]/g, '_')}`
  // Fails only for a server name outside the rule, which no caller passes (a load's name is checked, a client's made a prefix):
  // kept so that no name outside the rule is ever registered.
  if (!NAME_PATTERN.test(name)) return { skip: 'too-long' }
  return { name }
}
