import { EventEmitter } from 'node:events'
import type { Writable } from 'node:stream'
import { ExitHolds } from '@cordis-subagents/shared'

/**
 * What the `cordis-subagents-mcp` bin and the stdio server share: the real stdout (the bin points
 * `process.stdout.write` at stderr, so nothing else can write into the protocol stream) and the
 * server's lifecycle signals. Kept on globalThis: the loader may import another copy of this module.
 */
const KEY = Symbol.for('@cordis-subagents/mcp/serve-stdio')

interface StdioState {
  /** Set by the bin: where MCP messages go. */
  output?: Writable
  /** `applied`, `ready`, `failed(error)` of the stdio server. */
  signals?: EventEmitter
  /** Cleanup the bin waits for before it exits (cordis does not await a service's async stop). */
  holds?: ExitHolds
}

function state(): StdioState {
  const global = globalThis as { [KEY]?: StdioState }
  return global[KEY] ??= {}
}

/** Called by the bin before anything else writes: MCP messages go to `output`. */
export function reserveStdout(output: Writable): void {
  state().output = output
}

/** The stream the stdio server writes MCP messages to. */
export function stdioOutput(): Writable {
  return state().output ?? process.stdout
}

/** Process-wide signals of the stdio server, for the bin whatever copy of this package the loader imported. */
export function stdioSignals(): EventEmitter {
  return state().signals ??= new EventEmitter()
}

/**
 * Makes the bin wait for `work` (bounded) before it stops the next entry and exits: the served sessions' close (their
 * calls' agents disposed, their delegations' children torn down), which cordis does not await. Outside the bin it only runs `work`.
 */
export function holdExit(work: Promise<unknown>): void {
  (state().holds ??= new ExitHolds()).hold(work)
}

/** Resolves when every held cleanup has settled (the bin bounds the wait). */
export async function exitHolds(): Promise<void> {
  await state().holds?.settled()
}
