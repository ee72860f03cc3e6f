import type { IncomingMessage } from 'node:http'

/** A request body read to its end, or why reading stopped: over `maxBodyBytes`, or not complete within `bodyTimeout`. */
export type BodyRead = { text: string } | { refused: 'too-large' | 'timeout' }

/**
 * Reads a request's body: at most `max` bytes, complete within `timeout` ms from here (the headers came within
 * the server's headersTimeout). A body that is over, or stalls, or trickles past the deadline stops being read and
 * the chunks read so far are let go; the caller answers and closes the connection. A client that leaves mid-body
 * rejects the read (there is nobody to answer).
 */
export function readBody(req: IncomingMessage, max: number, timeout: number): Promise<BodyRead> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length'])
    if (Number.isFinite(declared) && declared > max) {
      req.resume()
      return resolve({ refused: 'too-large' })
    }
    let chunks: Buffer[] = []
    let size = 0
    const settle = (outcome: BodyRead | Error) => {
      clearTimeout(deadline)
      req.off('data', onData).off('end', onEnd).off('error', onGone).off('close', onGone)
      const text = 'text' in outcome ? Buffer.concat(chunks).toString('utf8') : ''
      chunks = []
      if (outcome instanceof Error) return reject(outcome)
      if ('refused' in outcome) {
        // Nothing more is kept: what still comes is read and dropped until the connection closes.
        req.resume()
        return resolve(outcome)
      }
      resolve({ text })
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > max) settle({ refused: 'too-large' })
      else chunks.push(chunk)
    }
    const onEnd = () => settle({ text: '' })
    const onGone = (error?: Error) => settle(error ?? new Error('the client closed the connection before its body ended'))
    const deadline = setTimeout(() => settle({ refused: 'timeout' }), timeout)
    req.on('data', onData).on('end', onEnd).on('error', onGone).on('close', onGone)
  })
}
