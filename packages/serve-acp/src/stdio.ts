import { EventEmitter } from 'node:events'
import { Readable, Writable } from 'node:stream'
import { ExitHolds } from '@cordis-subagents/shared'
import type { AcpTransport } from './config.js'

/**
 * The process's stdin/stdout as an ACP transport. stdout belongs to one server at a time, and the
 * bin hands over its own writer (it points `process.stdout.write` at stderr, so nothing else can
 * write into the protocol stream): both are kept process-wide, across copies of this module.
 */
const KEY = Symbol.for('@cordis-subagents/serve-acp/stdio')

interface StdioState {
  /** Set by the bin: the real stdout writer (process.stdout.write itself then goes to stderr). */
  output?: NodeJS.WritableStream
  owner?: object
  /** Cleanup the bin waits for before it exits (cordis does not await a plugin's async dispose). */
  holds?: ExitHolds
  /** serve-acp's lifecycle, for the bin whatever app (cordis or Koishi, either copy of cordis) hosts the plugin. */
  signals?: EventEmitter
}

function state(): StdioState {
  const global = globalThis as { [KEY]?: StdioState }
  return global[KEY] ??= {}
}

/** Called by the bin before anything else writes: ACP gets `output`, everything else stderr. */
export function reserveStdout(output: NodeJS.WritableStream): void {
  state().output = output
}

/** Claims stdio for `owner`; undefined when another server holds it. */
export function claimStdio(owner: object): AcpTransport | undefined {
  const shared = state()
  if (shared.owner && shared.owner !== owner) return undefined
  shared.owner = owner
  const output = shared.output ?? process.stdout
  return {
    input: Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>,
    output: Writable.toWeb(output as Writable) as WritableStream<Uint8Array>,
  }
}

export function releaseStdio(owner: object): void {
  const shared = state()
  if (shared.owner === owner) shared.owner = undefined
}

/**
 * Makes the bin wait for `work` (bounded) before the process exits: a plugin's async cleanup
 * (an exporter's flush, an agent's dispose) that cordis' ctx.stop() does not await. Outside the bin
 * it only runs `work`.
 */
export function holdExit(work: Promise<unknown>): void {
  (state().holds ??= new ExitHolds()).hold(work)
}

/** Resolves when every held cleanup has settled (the bin bounds the wait). */
export async function exitHolds(): Promise<void> {
  await state().holds?.settled()
}

/** Process-wide: `applied`, `ready`, `failed(error)`, `closed` of the serve-acp instance on stdio. */
export function serverSignals(): EventEmitter {
  return state().signals ??= new EventEmitter()
}
