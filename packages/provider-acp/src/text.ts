/**
 * Scrubbing of agent-controlled text before it reaches a model, a log or a terminal.
 *
 * Everything here runs on the host's event loop over text an agent chose, so every pattern is
 * linear-time: names and values have bounded lengths, a name is only tried from its first
 * character (a lookbehind), and callers cap the text before it gets here (`Scrubber.scrub`
 * caps again, to `MAX_SCRUB_CHARS`).
 */

const REDACTED = '[redacted]'

/** The most text one `scrub` call looks at; the rest is cut (with a note). */
export const MAX_SCRUB_CHARS = 64 * 1024

/** Name fragments that make a `NAME=value` pair a credential in free text. */
const CREDENTIAL_WORDS = /KEY|TOKEN|SECRET|PASS|PWD|CREDENTIAL|AUTH|COOKIE|JWT|DSN|WEBHOOK|SESSION|PRIVATE/i

/** Credential shapes that are recognisable without knowing the value. Order matters. */
const PATTERNS: Array<[RegExp, string | ((...groups: string[]) => string)]> = [
  // Authorization headers and similar: keep the scheme, drop the credential.
  [/\b(Bearer|Basic|Token)([ \t]{1,8})[A-Za-z0-9._~+/=-]{6,}/gi, `$1$2${REDACTED}`],
  // NAME=value / NAME: value where NAME looks like a credential. The name is tried only from its
  // first character and is at most 128 long. Once a value starts it always matches (to its
  // closing quote, or the end of the line / word), so no scan is repeated.
  [/(?<![A-Za-z0-9_.-])([A-Za-z0-9_.-]{1,128})(?![A-Za-z0-9_.-])(["']?[ \t]{0,8}[=:][ \t]{0,8})("[^"\n]*"?|'[^'\n]*'?|[^\s"',;]+)/g,
    (match: string, name: string, separator: string) => CREDENTIAL_WORDS.test(name) ? `${name}${separator}${REDACTED}` : match],
  // Userinfo in URLs: scheme://user:password@host (the user may be empty).
  [/(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]{0,31}:\/\/)[^\s/@:]{0,1024}:[^\s/@]{1,1024}@/g, `$1${REDACTED}@`],
  // Well-known token formats.
  [/\b(?:sk|pk|rk)-[A-Za-z0-9_-]{8,}/g, REDACTED],
  [/\bgh[pousr]_[A-Za-z0-9]{16,}/g, REDACTED],
  [/\bgithub_pat_[A-Za-z0-9_]{16,}/g, REDACTED],
  [/\bxox[abposr]-[A-Za-z0-9-]{10,}/g, REDACTED],
  [/\bAKIA[0-9A-Z]{16}\b/g, REDACTED],
  [/\bAIza[0-9A-Za-z_-]{30,}/g, REDACTED],
  [/\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*/g, REDACTED],
]

// ANSI escape sequences (CSI, OSC, and two-character escapes), then every other control
// character except newline and tab. Bounded repetitions keep them linear.
const ANSI = /\x1b\[[0-?]{0,64}[ -/]{0,16}[@-~]?|\x1b\][^\x07\x1b]{0,2048}(?:\x07|\x1b\\)?|\x1b[@-_]?|\x9b[0-?]{0,64}[ -/]{0,16}[@-~]?/g
// eslint-disable-next-line no-control-regex
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]/g

/**
 * Removes terminal escape sequences and control characters (keeps newline and tab; a carriage
 * return is dropped, so "progress\rbar" cannot overwrite a line on a terminal).
 */
export function stripControl(text: string): string {
  return text.replace(ANSI, '').replace(CONTROL, '')
}

/**
 * Removes credentials from text meant for diagnostics, logs and progress: every known secret
 * value (the excluded host variables, configured env values) and recognisable credential
 * shapes; strips control characters. Linear in the (capped) input.
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
    let result = text.length > MAX_SCRUB_CHARS
      ? `${copyString(text.slice(0, MAX_SCRUB_CHARS))}…[cut at ${MAX_SCRUB_CHARS} characters]`
      : text
    // Secret values first, while they are still intact (before control characters are taken out).
    for (const value of this.values) {
      if (result.includes(value)) result = result.split(value).join(REDACTED)
    }
    result = stripControl(result)
    for (const value of this.values) {
      if (result.includes(value)) result = result.split(value).join(REDACTED)
    }
    for (const [pattern, replacement] of PATTERNS) result = result.replace(pattern, replacement as string)
    return result
  }
}

const encoder = new TextEncoder()

export function byteLength(text: string): number {
  return encoder.encode(text).length
}

/**
 * The first `maxChars` characters of `text` (never half a surrogate pair), with `…` when cut.
 * A cut is a copy: a plain slice would keep the whole (possibly huge) original alive for as
 * long as anyone holds the head, e.g. a progress update in a listener's log.
 */
export function headChars(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text
  let end = maxChars
  const code = text.charCodeAt(end - 1)
  if (code >= 0xd800 && code <= 0xdbff) end--
  return `${copyString(text.slice(0, end))}…`
}

/** A string that shares no memory with `text` (UTF-16 round trip: every code unit kept). */
export function copyString(text: string): string {
  return Buffer.from(text, 'utf16le').toString('utf16le')
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
