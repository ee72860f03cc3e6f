import { capBytes } from '@cordis-subagents/shared'

/** Longest diagnostic the service hands out, in UTF-8 bytes. */
export const MAX_DIAGNOSTIC_BYTES = 4096

/** Appended to a diagnostic that was cut. */
export const TRUNCATION_MARK = ' …[truncated]'

/**
 * Caps `text` at `maxBytes` UTF-8 bytes, marker included. Cuts on a code point boundary (never
 * inside a multi-byte character or a surrogate pair) and appends `TRUNCATION_MARK`.
 */
export function capDiagnostic(text: string, maxBytes = MAX_DIAGNOSTIC_BYTES): string {
  return capBytes(text, maxBytes, TRUNCATION_MARK)
}
