import { EventEmitter } from 'node:events'
import { Readable, Writable } from 'node:stream'
import { ExitHolds } from '@cordis-subagents/shared'
import type { AcpTransport } from './config.js'

/**
 * The process's stdin/stdout as an ACP transport. stdout belongs to one server at a time, and the
 * bin hands over its own writer (it points `process.stdout.write` at stderr, so nothing else can
 * write into the protocol stream): both are kept process-wide, across copies of this module. So are
 * the web streams over them, made once: each load is handed the same pair, and its server lets go of
 * them when it closes (never cancels or closes them), so a reload serves again and no load adds
 * listeners to process.stdin/stdout.
 */
const KEY = Symbol.for('@cordis-subagents/serve-acp/stdio')

interface StdioState {
  /** Set by the bin: the real stdout writer (process.stdout.write itself then goes to stderr). */
  output?: NodeJS.WritableStream
  owner?: object
  /** The web streams over stdin and the ACP output (`of`), made once and handed to every claim. */
  streams?: { of: NodeJS.WritableStream; transport: AcpTransport }
  /** Settles once the servers that held the streams let go of them (their close). */
  handover?: Promise<unknown>
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

/** A claim of stdio: the process's pair, to serve on once `handedOver` settles (the previous server let go of it). */
export interface StdioClaim {
  transport: AcpTransport
  handedOver: Promise<unknown>
}

/** Claims stdio for `owner`; undefined when another server holds it. */
export function claimStdio(owner: object): StdioClaim | undefined {
  const shared = state()
  if (shared.owner && shared.owner !== owner) return undefined
  shared.owner = owner
  const output = shared.output ?? process.stdout
  if (shared.streams?.of !== output) {
    const input = shared.streams?.transport.input ?? Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>
    shared.streams = { of: output, transport: { input, output: Writable.toWeb(output as Writable) as WritableStream<Uint8Array> } }
  }
  return { transport: shared.streams.transport, handedOver: shared.handover ?? Promise.resolve() }
}

/** Gives stdio back; the next claim serves once `closed` (the server's close, which lets go of the streams) settles. */
export function releaseStdio(owner: object, closed: Promise<unknown> = Promise.resolve()): void {
  const shared = state()
  if (shared.owner !== owner) return
  shared.owner = undefined
  shared.handover = Promise.allSettled([shared.handover, closed])
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
