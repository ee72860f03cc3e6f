import type { ToolResult } from './types.js'

/**
 * Default cap on one tool result's `content`, in UTF-8 bytes: 100 KiB, about 25,000 tokens of
 * English or code. Several such results fit in a 128k-token context window beside the
 * conversation, and text that long is better asked for in parts.
 */
export const DEFAULT_MAX_RESULT_BYTES = 100 * 1024

/** Smallest cap accepted: room for some content besides the note. */
export const MIN_RESULT_BYTES = 1024

const encoder = new TextEncoder()

/**
 * The longest head of `text` within `maxBytes` UTF-8 bytes (never inside a character), as a new
 * string: a `slice` would keep the whole original alive behind it (V8 slices share the parent),
 * so a cut 100 MB result would still hold 100 MB.
 */
function freshHead(text: string, maxBytes: number): { head: string; bytes: number } {
  const buffer = new Uint8Array(maxBytes)
  const { written } = encoder.encodeInto(text, buffer)
  return { head: Buffer.from(buffer.buffer, buffer.byteOffset, written).toString('utf8'), bytes: written }
}

/** Bytes kept free at the end for the note (its numbers have at most 16 digits each). */
const NOTE_ROOM = 256

/**
 * `result` with its `content` cut to at most `maxBytes` UTF-8 bytes, on a character boundary,
 * with a note saying how much was cut; every other field (`isError`, `metadata`, `usage`, `work`)
 * is kept. Linear in the content's length and allocates only the kept head.
 */
export function capResult(result: ToolResult, maxBytes: number): ToolResult {
  const { content } = result
  // A UTF-16 code unit is at most 3 UTF-8 bytes: most results need no measuring at all.
  if (content.length * 3 <= maxBytes) return result
  const total = Buffer.byteLength(content, 'utf8')
  if (total <= maxBytes) return result
  const { head, bytes } = freshHead(content, maxBytes - NOTE_ROOM)
  const cut = total - bytes
  const note = `\n[… cut ${cut} bytes of ${total}: the tool result cap is ${maxBytes} bytes; `
    + 'ask the tool for a smaller part (a range, a filter, a page) if you need the rest.]'
  return { ...result, content: head + note }
}
