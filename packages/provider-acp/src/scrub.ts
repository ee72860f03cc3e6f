/** Environment variable names treated as credentials: dropped from the child env unless configured. */
export const CREDENTIAL_NAME = /KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL/i

/** Longest diagnostic this provider hands out, in UTF-8 bytes (DESIGN.md §6). */

const REDACTED = '[redacted]'

/** Credential shapes that are recognisable without knowing the value. Order matters. */
const PATTERNS: Array<[RegExp, string]> = [
  // Authorization headers and similar: keep the scheme, drop the credential.
  [/\b(Bearer|Basic|Token)(\s+)[A-Za-z0-9._~+/=-]{6,}/gi, `$1$2${REDACTED}`],
  // NAME=value / NAME: value where NAME looks like a credential.
  [/\b([A-Za-z0-9_.-]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)[A-Za-z0-9_.-]*)(["']?\s*[=:]\s*)("[^"\n]*"|'[^'\n]*'|[^\s"',;]+)/gi, `$1$2${REDACTED}`],
  // Userinfo in URLs: scheme://user:password@host
  [/(\b[a-z][a-z0-9+.-]*:\/\/)[^\s/@:]+:[^\s/@]+@/gi, `$1${REDACTED}@`],
  // Well-known token formats.
  [/\b(?:sk|pk|rk)-[A-Za-z0-9_-]{8,}/g, REDACTED],
  [/\bgh[pousr]_[A-Za-z0-9]{16,}/g, REDACTED],
  [/\bgithub_pat_[A-Za-z0-9_]{16,}/g, REDACTED],
  [/\bxox[abposr]-[A-Za-z0-9-]{10,}/g, REDACTED],
  [/\bAKIA[0-9A-Z]{16}\b/g, REDACTED],
  [/\bAIza[0-9A-Za-z_-]{30,}/g, REDACTED],
  [/\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*/g, REDACTED],
]

/**
 * Removes credentials from text meant for diagnostics and logs: every known secret value
 * (credential-shaped host variables, configured env values) and recognisable credential shapes.
 */
export class Scrubber {
  private readonly values: string[]

  constructor(values: Iterable<string>) {
    const unique = new Set<string>()
    for (const value of values) {
      // Very short values would redact ordinary words and leak nothing worth hiding.
      if (typeof value === 'string' && value.trim().length >= 6) unique.add(value)
    }
    this.values = [...unique].sort((a, b) => b.length - a.length)
  }

  scrub(text: string): string {
    let result = text
    for (const value of this.values) {
      if (result.includes(value)) result = result.split(value).join(REDACTED)
    }
    for (const [pattern, replacement] of PATTERNS) result = result.replace(pattern, replacement)
    return result
  }
}

/** Secret values to scrub: credential-shaped variables of `env`, plus every explicitly configured value. */
export function secretValues(env: NodeJS.ProcessEnv, configured: Record<string, string | boolean>): string[] {
  const values: string[] = []
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && CREDENTIAL_NAME.test(name)) values.push(value)
  }
  for (const [name, value] of Object.entries(configured)) {
    if (typeof value === 'string' && CREDENTIAL_NAME.test(name)) values.push(value)
    if (value === true && env[name] !== undefined) values.push(env[name]!)
  }
  return values
}

const encoder = new TextEncoder()

export function byteLength(text: string): number {
  return encoder.encode(text).length
}

/**
 * The tail of `text` within `maxBytes` UTF-8 bytes. When it has to cut, it starts at a line
 * boundary where one exists, so no half line (possibly half a secret) leads the tail.
 */
export function tailBytes(text: string, maxBytes: number): string {
  if (maxBytes <= 0) return ''
  if (text.length * 3 <= maxBytes || byteLength(text) <= maxBytes) return text
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
