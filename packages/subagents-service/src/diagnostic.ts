/** Longest diagnostic the service hands out, in UTF-8 bytes. */
export const MAX_DIAGNOSTIC_BYTES = 4096

/** Appended to a diagnostic that was cut. */
export const TRUNCATION_MARK = ' …[truncated]'

const encoder = new TextEncoder()

/**
 * Caps `text` at `maxBytes` UTF-8 bytes, marker included. Cuts on a code point boundary (never
 * inside a multi-byte character or a surrogate pair) and appends `TRUNCATION_MARK`.
 */
export function capDiagnostic(text: string, maxBytes = MAX_DIAGNOSTIC_BYTES): string {
  // Every UTF-16 code unit is at most 3 UTF-8 bytes.
  if (text.length * 3 <= maxBytes) return text
  if (encoder.encode(text).length <= maxBytes) return text
  const mark = encoder.encode(TRUNCATION_MARK).length
  if (maxBytes <= mark) return ''
  const buffer = new Uint8Array(maxBytes - mark)
  const { read } = encoder.encodeInto(text, buffer)
  return text.slice(0, read) + TRUNCATION_MARK
}

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
