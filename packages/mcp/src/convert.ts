import { headChars } from '@cordis-subagents/shared'
import type { ToolImage, ToolResult } from '@cordis-subagents/tools'

export interface ResultBounds {
  /** Content parts turned into text; the rest are counted in a note. */
  maxParts: number
  /** Characters (UTF-16 code units) kept of each part (text, JSON); each cut part says so. */
  maxPartChars: number
  /** Images passed on as `ToolResult.images` (for models that accept images); 0: none. */
  maxImages: number
  /** Largest image passed on (decoded bytes); a larger one is only noted. */
  maxImageBytes: number
}

/** Image types passed on to a model (what chat-completions vision models accept). */
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp'])
/** A base64 payload: checked before it is passed on (its length is bounded first). */
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

/**
 * An MCP `tools/call` result as our `ToolResult`: text parts as they are, binary parts (image,
 * audio, embedded blobs) as a one-line note with the mime type and size, links as their URI,
 * `structuredContent` as JSON when there is no text. At most `maxParts` parts of at most
 * `maxPartChars` each, so what reaches the registry is bounded before its own cap. The first
 * `maxImages` images of an accepted type and at most `maxImageBytes` each are also passed on as
 * `images` (their note says `shown to models that accept images`), for a model that accepts images.
 */
export function toToolResult(result: unknown, bounds: ResultBounds): ToolResult {
  const body = (result && typeof result === 'object' ? result : {}) as { content?: unknown; structuredContent?: unknown; isError?: unknown; toolResult?: unknown }
  const parts = Array.isArray(body.content) ? body.content : []
  const texts: string[] = []
  const images: ToolImage[] = []
  let hasText = false
  for (let i = 0; i < parts.length && i < bounds.maxParts; i++) {
    const image = images.length < bounds.maxImages ? attachable(parts[i], bounds.maxImageBytes) : undefined
    if (image) {
      images.push(image)
      texts.push(`[image ${image.mimeType}, ${base64Bytes(image.data)} bytes; shown to models that accept images]`)
      continue
    }
    const part = describePart(parts[i], bounds.maxPartChars)
    if (part.text) hasText = true
    texts.push(part.line)
  }
  if (parts.length > bounds.maxParts) texts.push(`[${parts.length - bounds.maxParts} more content parts not shown]`)
  const structured = body.structuredContent ?? (parts.length === 0 ? body.toolResult : undefined)
  if (!hasText && structured !== undefined) texts.unshift(cut(safeJson(structured), bounds.maxPartChars))
  const content = texts.join('\n') || '(the tool returned no content)'
  const out: ToolResult = body.isError === true ? { isError: true, content } : { content }
  if (images.length) out.images = images
  return out
}

/** An image part a model may be given: an accepted type, base64, at most `maxBytes` decoded. */
function attachable(part: unknown, maxBytes: number): ToolImage | undefined {
  const p = (part && typeof part === 'object' ? part : {}) as Record<string, unknown>
  if (p.type !== 'image' || typeof p.data !== 'string' || typeof p.mimeType !== 'string') return undefined
  const mimeType = p.mimeType.toLowerCase()
  if (!IMAGE_TYPES.has(mimeType) || p.data.length === 0 || base64Bytes(p.data) > maxBytes || !BASE64.test(p.data)) return undefined
  return { mimeType, data: p.data }
}

function describePart(part: unknown, max: number): { line: string; text?: boolean } {
  const p = (part && typeof part === 'object' ? part : {}) as Record<string, unknown>
  switch (p.type) {
    case 'text':
      return { line: cut(typeof p.text === 'string' ? p.text : '', max), text: true }
    case 'image':
    case 'audio':
      return { line: `[${p.type} ${mime(p.mimeType)}, ${base64Bytes(p.data)} bytes, not shown]` }
    case 'resource_link':
      return { line: cut(`[resource link ${str(p.uri)}${p.name ? ` (${str(p.name)})` : ''}${p.mimeType ? ` ${mime(p.mimeType)}` : ''}]`, max) }
    case 'resource': {
      const r = (p.resource && typeof p.resource === 'object' ? p.resource : {}) as Record<string, unknown>
      if (typeof r.text === 'string') return { line: cut(`[resource ${str(r.uri)}]\n${r.text}`, max), text: true }
      return { line: cut(`[resource ${str(r.uri)} ${mime(r.mimeType)}, ${base64Bytes(r.blob)} bytes, not shown]`, max) }
    }
    default:
      return { line: `[content of type ${cut(str(p.type), 64)} not shown]` }
  }
}

/**
 * `text` within `max` characters (UTF-16 code units) and a note of how many were cut; never half a surrogate pair,
 * so one fewer may be kept (and counted in the note).
 */
function cut(text: string, max: number): string {
  if (text.length <= max) return text
  const head = headChars(text, max)
  return `${head}\n[cut: ${text.length - head.length} more characters]`
}

function str(value: unknown): string {
  return typeof value === 'string' ? headChars(value, 2048) : '?'
}

function mime(value: unknown): string {
  return typeof value === 'string' && /^[\w.+-]{1,64}\/[\w.+-]{1,64}$/.test(value) ? value : 'unknown type'
}

/** The decoded size of base64 text, without decoding it. */
function base64Bytes(data: unknown): number {
  if (typeof data !== 'string') return 0
  let padding = 0
  if (data.endsWith('==')) padding = 2
  else if (data.endsWith('=')) padding = 1
  return Math.max(0, Math.floor(data.length * 3 / 4) - padding)
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? 'null'
  } catch {
    return '(structured content that is not JSON)'
  }
}
