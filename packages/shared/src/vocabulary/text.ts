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

/**
 * The head of `text` within `maxChars` UTF-16 code units (a string's `length`), never ending in half a surrogate pair,
 * with `mark` appended when it was cut (the mark is not counted). `text` itself when it fits. A cut is a copy: a plain
 * slice can keep the whole, possibly huge, original alive for as long as anyone holds the head.
 */
export function headChars(text: string, maxChars: number, mark = ''): string {
  if (text.length <= maxChars) return text
  let end = Math.max(0, Math.floor(maxChars))
  if (end > 0 && isHighSurrogate(text.charCodeAt(end - 1))) end--
  return copyString(text.slice(0, end)) + mark
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff

/** A string that shares no memory with `text` (a UTF-16 round trip keeps every code unit). */
function copyString(text: string): string {
  return Buffer.from(text, 'utf16le').toString('utf16le')
}
