/** A cap for agent-chosen text: a tail by UTF-8 bytes, never splitting a character (a head by characters is shared's `headChars`). */
import { utf8Length } from '@cordis-subagents/shared'

/**
 * The tail of `text` within `maxBytes` UTF-8 bytes. When it has to cut, it starts at a line
 * boundary where one exists, so no half line (possibly half a secret) leads the tail.
 */
export function tailBytes(text: string, maxBytes: number): string {
  if (maxBytes <= 0) return ''
  if (text.length * 3 <= maxBytes || utf8Length(text) <= maxBytes) return text
  // Walk back over code points until the budget is spent.
  let bytes = 0
  let start = text.length
  while (start > 0) {
    const code = text.codePointAt(start - 1)!
    const isLowSurrogate = code >= 0xdc00 && code <= 0xdfff && start >= 2
    const width = isLowSurrogate ? 4 : code < 0x80 ? 1 : code < 0x800 ? 2 : 3
    if (bytes + width > maxBytes) break
    bytes += width
    start -= isLowSurrogate ? 2 : 1
  }
  let tail = text.slice(start)
  const newline = tail.indexOf('\n')
  if (newline >= 0 && newline < tail.length - 1) tail = tail.slice(newline + 1)
  return tail
}
