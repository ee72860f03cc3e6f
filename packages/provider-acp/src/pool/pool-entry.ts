import type { AgentSlot } from '../agent-slot.js'
import type { RunSettings } from '../settings.js'

export type State = 'starting' | 'idle' | 'busy'

/** One process the pool knows: a spare, an idle pooled process, or one serving a run. */
export interface Entry {
  slot: AgentSlot
  /** What a run must match to use this process (cwd, env, MCP servers). */
  key: string
  state: State
  idleTimer?: NodeJS.Timeout
  stopping?: Promise<void>
  /** A starting spare: settles true once initialized and usable. */
  ready?: Promise<boolean>
  /** The spare finished initializing. */
  up?: boolean
  /** A run waits for this starting spare. */
  claimed?: boolean
}

/** What a run must share with a pooled process: the working directory, every environment variable, the MCP servers. */
export function poolKey(settings: RunSettings): string {
  const env = Object.entries(settings.env).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return JSON.stringify([settings.cwd, env, settings.mcpServers])
}
