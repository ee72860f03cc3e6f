/**
 * The one secret redactor: text from outside (an agent's stderr, a model server's error body, an
 * SDK's debug line) made safe to put in a diagnostic, a log line or a progress update.
 *
 * Everything here runs on the host's event loop over text someone else chose, so every pass is
 * a single left-to-right scan (plus bounded, non-backtracking patterns for terminal escapes):
 * time is linear in the text, and the text is capped first (`Redactor` caps at `maxChars`).
 */
import { isHighSurrogate, isPlaceholderValue, isTokenChar, redactCredentialShapes, Splice } from './credential-shapes.js'
import { stripControl } from './peer-text.js'

export { REDACTED } from './credential-shapes.js'

/** The most text one `Redactor.redact` call looks at by default; the rest is cut, with a note. */
export const MAX_REDACT_CHARS = 64 * 1024

/** Shortest configured secret matched literally (shorter ones would mask ordinary words). */
const MIN_SECRET_LENGTH = 4
/** A configured secret this long also masks any token starting with its first 8 characters (partial echoes). */
const PREFIX_SECRET_LENGTH = 16

export interface RedactorOptions {
  /** The most characters one call looks at (default `MAX_REDACT_CHARS`); more is cut, with a note. */
  maxChars?: number
}

/**
 * Removes secrets from text: every occurrence of a configured secret (and its URL-encoded form),
 * terminal escapes and control characters, user info in URLs (`scheme://user:pass@`), every
 * query-parameter value, values of credential-named parameters (`api_key=…`, `DB_PASS: …`,
 * `"token": "…"`), `Bearer` / `Basic` / `Token` credentials, and key-shaped tokens (provider
 * prefixes such as `sk-`, `ghp_`, `AKIA`, JWTs, masked echoes like `abc****wxyz`, long runs
 * mixing letters and digits, tokens starting with a long configured secret's first 8 characters).
 * Build one per set of secrets and reuse it; `redact()` is the one-call form.
 */
export class Redactor {
  private readonly literals: string[]
  private readonly secretPrefixes: string[]
  private readonly maxChars: number

  constructor(secrets: Iterable<string> = [], options: RedactorOptions = {}) {
    const set = new Set<string>()
    for (const secret of secrets) {
      if (typeof secret !== 'string' || secret.length < MIN_SECRET_LENGTH || isPlaceholderValue(secret)) continue
      set.add(secret)
      let encoded = secret
      try {
        encoded = encodeURIComponent(secret)
      } catch {
        // a lone surrogate has no URL-encoded form
      }
      if (encoded !== secret) set.add(encoded)
    }
    // Longest first, so a secret containing another is masked whole.
    this.literals = [...set].sort((a, b) => b.length - a.length)
    this.secretPrefixes = this.literals.filter((s) => s.length >= PREFIX_SECRET_LENGTH).map((s) => s.slice(0, 8))
    this.maxChars = options.maxChars ?? MAX_REDACT_CHARS
  }

  redact(text: string): string {
    let out = text.length > this.maxChars
      ? `${copyString(capForRedaction(text, this.maxChars))}[cut at ${this.maxChars} characters]`
      : text
    // Secret values first, while they are intact, and again once control characters that could
    // split one are gone; once more at the end, in case a replacement joined two halves.
    out = this.replaceLiterals(out)
    const stripped = stripControl(out)
    if (stripped !== out) out = this.replaceLiterals(stripped)
    out = redactCredentialShapes(out, this.secretPrefixes)
    return this.replaceLiterals(out)
  }

  private replaceLiterals(text: string): string {
    let out = text
    for (const secret of this.literals) out = replaceAll(out, secret)
    return out
  }
}

/** `new Redactor(secrets).redact(text)`: for a one-off text. */
export function redact(text: string, secrets: Iterable<string> = []): string {
  return new Redactor(secrets).redact(text)
}

/**
 * The first `limit` characters of `text`, minus a trailing partial token (which could be the
 * head of a secret cut in two, no longer recognisable), with `…` when cut. Use before
 * redacting untrusted text.
 */
export function capForRedaction(text: string, limit: number): string {
  if (text.length <= limit) return text
  let end = Math.max(0, limit)
  while (end > 0 && isTokenChar(text.charCodeAt(end - 1))) end--
  // Never split a surrogate pair.
  if (end > 0 && isHighSurrogate(text.charCodeAt(end - 1))) end--
  return `${text.slice(0, end)}…`
}

/** A string that shares no memory with `text` (a slice would keep a huge original alive). */
function copyString(text: string): string {
  return Buffer.from(text, 'utf16le').toString('utf16le')
}

/** Non-overlapping occurrences of `pattern` replaced by REDACTED, found with Knuth-Morris-Pratt. */
function replaceAll(text: string, pattern: string): string {
  const m = pattern.length
  if (m === 0 || text.length < m) return text
  const fail = new Int32Array(m)
  for (let i = 1, k = 0; i < m; i++) {
    while (k > 0 && pattern.charCodeAt(i) !== pattern.charCodeAt(k)) k = fail[k - 1]!
    if (pattern.charCodeAt(i) === pattern.charCodeAt(k)) k++
    fail[i] = k
  }
  const out = new Splice(text)
  for (let i = 0, k = 0; i < text.length; i++) {
    while (k > 0 && text.charCodeAt(i) !== pattern.charCodeAt(k)) k = fail[k - 1]!
    if (text.charCodeAt(i) === pattern.charCodeAt(k)) k++
    if (k === m) {
      out.replace(i - m + 1, i + 1)
      k = 0
    }
  }
  return out.result()
}
