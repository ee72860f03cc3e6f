/**
 * Text from outside (an error, a model, an agent) made safe to hold and show: a one-line error
 * description that never throws, and UTF-8 / character caps that never split a character.
 */

const encoder = new TextEncoder()

/** A one-line description of anything thrown; never throws itself. */
export function describeError(error: unknown): string {
  try {
    if (error instanceof Error) return error.message || error.name
    if (typeof error === 'string') return error
    return String(error)
  } catch {
    return 'an unprintable error'
  }
}

/** UTF-8 length of `text` in bytes. */
export function utf8Length(text: string): number {
  // Every UTF-16 code unit is at most 3 UTF-8 bytes; most texts need no encoding to know they fit.
  return encoder.encode(text).length
}

/**
 * The longest head of `text` within `maxBytes` UTF-8 bytes, cut on a code point boundary (never
 * inside a multi-byte character or a surrogate pair). `text` itself when it fits.
 */
export function headBytes(text: string, maxBytes: number): string {
  if (maxBytes <= 0) return ''
  if (text.length * 3 <= maxBytes) return text
  const buffer = new Uint8Array(maxBytes)
  const { read } = encoder.encodeInto(text, buffer)
  return read >= text.length ? text : text.slice(0, read)
}

/**
 * `text` capped at `maxBytes` UTF-8 bytes including `mark`, which is appended when it was cut
 * (empty when even the mark does not fit).
 */
export function capBytes(text: string, maxBytes: number, mark: string): string {
  if (text.length * 3 <= maxBytes || utf8Length(text) <= maxBytes) return text
  const room = maxBytes - utf8Length(mark)
  if (room <= 0) return ''
  return headBytes(text, room) + mark
}
