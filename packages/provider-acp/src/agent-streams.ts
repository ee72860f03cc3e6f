import { Transform, type Readable, type Writable } from 'node:stream'

/**
 * Bytes that may wait to be written to an agent's stdin beyond its largest message (README: Limits).
 * Past it the agent is not reading, and the run ends `ACP_INPUT_BACKLOG`.
 */
export const MAX_INPUT_BACKLOG_BYTES = 8 * 1024 * 1024

/** The counted stdout: `stream` ends after `limit` bytes (then `onLimit` once), or when `stop()` is called. */
export interface CountedOutput {
  stream: Readable
  stop(): void
}

/** `source` passed through unchanged until `limit` bytes were seen; then `onLimit` once and the end. */
export function countBytes(source: Readable, limit: number, onLimit: (limit: number) => void): CountedOutput {
  let seen = 0
  let over = false
  const stop = () => {
    if (over) return
    over = true
    // Stop reading: the protocol side sees the end of the stream.
    source.destroy()
    counter.push(null)
  }
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      if (over) return callback()
      seen += chunk.length
      if (seen > limit) {
        stop()
        onLimit(limit)
        return callback()
      }
      callback(null, chunk)
    },
  })
  source.on('error', () => {})
  counter.on('error', () => {})
  source.pipe(counter)
  return { stream: counter, stop }
}

/**
 * The agent's stdin as the SDK's writable. It never makes a write wait: the SDK would queue every
 * message behind it (a reply to each request the agent sends, read or not) without a bound. What
 * waits in the pipe's buffer is counted instead; once it is more than `limit` bytes beyond the
 * largest message written (a prompt may be larger than the limit), `onLimit` is called once and
 * later messages are dropped.
 */
export function boundedInput(stdin: Writable, limit: number, onLimit: (limit: number) => void): WritableStream<Uint8Array> {
  let waiting = 0
  let largest = 0
  let over = false
  return new WritableStream<Uint8Array>({
    start(controller) {
      stdin.once('error', (error) => controller.error(error))
    },
    write(chunk) {
      if (over) return
      if (stdin.destroyed || !stdin.writable) throw new Error('the agent\'s stdin is closed')
      const size = chunk.byteLength
      waiting += size
      largest = Math.max(largest, size)
      stdin.write(chunk, () => { waiting -= size })
      if (waiting - largest > limit) {
        over = true
        onLimit(limit)
      }
    },
    close() {
      stdin.end()
    },
  })
}

export function streamClosed(stream: NodeJS.ReadableStream): Promise<void> {
  return new Promise<void>((resolve) => {
    stream.once('end', () => resolve())
    stream.once('close', () => resolve())
    stream.once('error', () => resolve())
  })
}

/** `promise`'s value, or undefined after `ms` (the timer is cleared either way). */
export function raceTimeout<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), Math.max(0, ms))
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}
