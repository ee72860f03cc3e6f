/**
 * The ACP SDK reports protocol trouble with `console.error`, and what it prints is partly
 * chosen by the agent ("Invalid message" with the message, ids of unknown responses). While
 * runs are live, `console.error` calls that come from the SDK go to the runs' scrubbed logger
 * instead (capped, control characters stripped, secrets removed); every other call is passed
 * on untouched.
 */
import { format } from 'node:util'
import { headChars } from '@cordis-subagents/shared'

export interface ConsoleSink {
  /** Receives the formatted text; scrubs and logs it. */
  (text: string): void
}

const SDK_PATH = /[\\/]@agentclientprotocol[\\/]sdk[\\/]/
const MAX_CHARS = 2000

const sinks = new Set<ConsoleSink>()
let original: typeof console.error | undefined
let installed: typeof console.error | undefined

function fromSdk(): boolean {
  const holder: { stack?: string } = {}
  Error.captureStackTrace(holder, installed)
  // The first frame is the caller of console.error.
  const frames = (holder.stack ?? '').split('\n').slice(1, 3)
  return frames.some((frame) => SDK_PATH.test(frame))
}

/** Routes the SDK's console.error to `sink` until the returned function is called. */
export function routeSdkConsole(sink: ConsoleSink): () => void {
  sinks.add(sink)
  if (!installed) {
    original = console.error
    const passOn = original
    installed = function consoleError(this: unknown, ...args: unknown[]) {
      if (sinks.size && fromSdk()) {
        let text: string
        try {
          text = headChars(format(...args), MAX_CHARS, '…')
        } catch {
          text = '(unprintable SDK message)'
        }
        // One sink is enough: the text is not tied to a run, every sink scrubs and logs it.
        const first = sinks.values().next().value
        first?.(text)
        return
      }
      return passOn.apply(this ?? console, args)
    }
    console.error = installed
  }
  return () => {
    sinks.delete(sink)
    if (sinks.size || !installed) return
    // Put the original back only if nobody replaced ours meanwhile.
    if (console.error === installed) console.error = original!
    installed = undefined
    original = undefined
  }
}
