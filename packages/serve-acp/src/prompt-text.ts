/** The text of a session/prompt's content blocks (text blocks and resource text; other kinds are named, not inlined). */
export function promptText(blocks: unknown, maxChars: number): string | { tooLarge: number } {
  if (!Array.isArray(blocks)) return ''
  const parts: string[] = []
  let length = 0
  for (const block of blocks) {
    const part = blockText(block)
    if (!part) continue
    length += part.length
    if (length > maxChars) return { tooLarge: length }
    parts.push(part)
  }
  return parts.join('')
}

function blockText(block: unknown): string {
  if (!block || typeof block !== 'object') return ''
  const { type, text, uri, resource } = block as Record<string, unknown>
  if (type === 'text' && typeof text === 'string') return text
  if (type === 'resource' && resource && typeof resource === 'object') {
    const inner = resource as Record<string, unknown>
    if (typeof inner.text === 'string') return `\n[${typeof inner.uri === 'string' ? inner.uri : 'resource'}]\n${inner.text}\n`
  }
  if (type === 'resource_link' && typeof uri === 'string') return `\n[${uri}]\n`
  return ''
}
