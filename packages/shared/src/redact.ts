/**
 * The one secret redactor: text from outside (an agent's stderr, a model server's error body, an
 * SDK's debug line) made safe to put in a diagnostic, a log line or a progress update.
 *
 * Everything here runs on the host's event loop over text someone else chose, so every pass is
 * a single left-to-right scan (plus bounded, non-backtracking patterns for terminal escapes):
 * time is linear in the text, and the text is capped first (`Redactor` caps at `maxChars`).
 */

export const REDACTED = '[redacted]'

/** The most text one `Redactor.redact` call looks at by default; the rest is cut, with a note. */
export const MAX_REDACT_CHARS = 64 * 1024

/** Shortest configured secret matched literally (shorter ones would mask ordinary words). */
const MIN_SECRET_LENGTH = 4
/** A configured secret this long also masks any token starting with its first 8 characters (partial echoes). */
const PREFIX_SECRET_LENGTH = 16
/** An unbroken run of letters and digits (with both) this long is treated as a key. */
const KEY_RUN_LENGTH = 24
/** Spaces or tabs allowed around `=` / `:` of a `NAME = value` pair, and after `Bearer`. */
const MAX_GAP = 8

/**
 * Key prefixes matched (case-insensitively) at the start of a token: a token starting with one
 * and at least this long is a key.
 */
const START_PREFIXES: ReadonlyArray<readonly [string, number]> = [
  ['sk-', 9], ...['sk_', 'pk-', 'pk_', 'rk-', 'rk_', 'gsk_', 'xai-', 'aiza', 'ghp_', 'gho_', 'ghu_', 'ghs_', 'ghr_',
    'github_pat_', 'glpat-', 'hf_', 'xoxa-', 'xoxb-', 'xoxo-', 'xoxp-', 'xoxr-', 'xoxs-', 'key-', 'api-', 'token-']
    .map((prefix) => [prefix, 12] as const),
]

/**
 * Well-known token formats matched (case-sensitively) wherever a word starts, also inside a
 * longer token (`my-sk-…`): the prefix and the least length from it.
 */
const WORD_FORMATS: ReadonlyArray<readonly [string, number]> = [
  ['sk-', 11], ['pk-', 11], ['rk-', 11],
  ['ghp_', 20], ['gho_', 20], ['ghu_', 20], ['ghs_', 20], ['ghr_', 20], ['github_pat_', 27],
  ['xoxa-', 15], ['xoxb-', 15], ['xoxo-', 15], ['xoxp-', 15], ['xoxr-', 15], ['xoxs-', 15],
  ['AKIA', 20], ['AIza', 34], ['eyJ', 8],
]

/** Parameter names (the end of a name) whose values are masked even outside a URL query. */
const SECRET_NAMES = ['key', 'token', 'secret', 'password', 'passwd', 'pwd', 'auth', 'authorization', 'signature', 'sig',
  'credential', 'credentials', 'session', 'cookie']
/** Words that make any name containing them a credential name (`DB_PASS`, `MY_JWT_X`, `SENTRY_DSN`). */
const CREDENTIAL_WORDS = /KEY|TOKEN|SECRET|PASS|PWD|CREDENTIAL|AUTH|COOKIE|JWT|DSN|WEBHOOK|SESSION|PRIVATE|SIGNATURE/i
/** Authorization schemes whose credential follows after spaces (`Bearer …`). */
const SCHEMES = new Set(['bearer', 'basic', 'token'])

// ANSI escape sequences (CSI, OSC, and two-character escapes), then every other control
// character except newline and tab. Bounded repetitions keep them linear.
// eslint-disable-next-line no-control-regex
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
      if (typeof secret !== 'string' || secret.length < MIN_SECRET_LENGTH) continue
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
    out = redactUserinfo(out)
    out = redactParameters(out)
    out = redactTokens(out, this.secretPrefixes)
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
  const parts: string[] = []
  let last = 0
  for (let i = 0, k = 0; i < text.length; i++) {
    while (k > 0 && text.charCodeAt(i) !== pattern.charCodeAt(k)) k = fail[k - 1]!
    if (text.charCodeAt(i) === pattern.charCodeAt(k)) k++
    if (k === m) {
      parts.push(text.slice(last, i - m + 1), REDACTED)
      last = i + 1
      k = 0
    }
  }
  if (!parts.length) return text
  parts.push(text.slice(last))
  return parts.join('')
}

/** `scheme://user:pass@host` (the user or the password may be missing) → `scheme://[redacted]@host`. */
function redactUserinfo(text: string): string {
  const parts: string[] = []
  let last = 0
  let i = text.indexOf('://')
  while (i !== -1) {
    const start = i + 3
    let j = start
    // User info ends at the "@"; the authority at the first / or space. A "?" or "#" may be part
    // of a password, so they do not end it. Each scan ends before the next "://" (at its "/").
    while (j < text.length && !isAuthorityEnd(text.charCodeAt(j))) j++
    if (j < text.length && text.charCodeAt(j) === 64 /* @ */ && j > start) {
      parts.push(text.slice(last, start), REDACTED)
      last = j
    }
    i = text.indexOf('://', Math.max(j, start))
  }
  if (!parts.length) return text
  parts.push(text.slice(last))
  return parts.join('')
}

function isAuthorityEnd(c: number): boolean {
  return c === 47 /* / */ || c === 64 /* @ */ || isSpaceOrQuote(c)
}

/**
 * Values of query parameters (`?a=1&b=2`) and of credential-named parameters anywhere
 * (`api_key=…`, `DB_PASS = …`, `token: …`, `"password":"…"`).
 */
function redactParameters(text: string): string {
  const parts: string[] = []
  let last = 0
  let i = 0
  const n = text.length
  while (i < n) {
    if (!isNameChar(text.charCodeAt(i))) {
      i++
      continue
    }
    const nameStart = i
    while (i < n && isNameChar(text.charCodeAt(i))) i++
    const before = nameStart > 0 ? text.charCodeAt(nameStart - 1) : 0
    const inQuery = before === 63 /* ? */ || before === 38 /* & */ || before === 59 /* ; */ || before === 35 /* # */
    // name=value, name: value, "name": "value", 'name' = value; a scheme (`https://`) is not a name.
    let j = i
    if (j < n && isQuote(text.charCodeAt(j))) j++
    j = skipGap(text, j, MAX_GAP)
    const separator = j < n ? text.charCodeAt(j) : 0
    if (separator !== 61 /* = */ && !(separator === 58 /* : */ && !text.startsWith('//', j + 1))) continue
    j = skipGap(text, j + 1, n)
    const queryValue = inQuery && separator === 61
    if (!queryValue && !isSecretName(text, nameStart, i)) continue
    const quote = j < n && isQuote(text.charCodeAt(j)) ? text.charCodeAt(j) : 0
    if (quote) j++
    const valueStart = j
    if (quote) {
      while (j < n && !isQuotedValueEnd(text.charCodeAt(j), quote)) j++
    } else if (queryValue) {
      while (j < n && !isQueryValueEnd(text.charCodeAt(j))) j++
    } else {
      while (j < n && !isValueEnd(text.charCodeAt(j))) j++
    }
    if (!quote && isSchemeBeforeCredential(text, valueStart, j)) {
      // `Authorization: Bearer …`: the token pass masks the credential after the scheme word.
      i = j
      continue
    }
    if (j > valueStart && !text.startsWith(REDACTED, valueStart)) {
      parts.push(text.slice(last, valueStart), REDACTED)
      last = j
    }
    i = j
  }
  if (!parts.length) return text
  parts.push(text.slice(last))
  return parts.join('')
}

/** Whether the name ends like a secret parameter or contains a credential word. */
function isSecretName(text: string, start: number, end: number): boolean {
  const tail = text.slice(Math.max(start, end - 16), end).toLowerCase()
  for (const name of SECRET_NAMES) {
    if (tail === name || tail.endsWith(`_${name}`) || tail.endsWith(`-${name}`) || tail.endsWith(`.${name}`) || (name.length > 3 && tail.endsWith(name))) return true
  }
  // One test per name, and names do not overlap: linear over the text.
  return CREDENTIAL_WORDS.test(text.slice(start, end))
}

/** A scheme word (`Bearer`) followed by spaces and something: its credential is the token pass's. */
function isSchemeBeforeCredential(text: string, start: number, end: number): boolean {
  if (end - start > 6 || !SCHEMES.has(text.slice(start, end).toLowerCase())) return false
  const next = skipGap(text, end, MAX_GAP)
  return next > end && next < text.length && !isSpaceOrQuote(text.charCodeAt(next))
}

/** Bearer/Basic/Token credentials and key-shaped tokens. */
function redactTokens(text: string, secretPrefixes: readonly string[]): string {
  const parts: string[] = []
  let last = 0
  let i = 0
  const n = text.length
  while (i < n) {
    if (!isTokenChar(text.charCodeAt(i))) {
      i++
      continue
    }
    const start = i
    while (i < n && isTokenChar(text.charCodeAt(i))) i++
    const scheme = i - start <= 6 ? text.slice(start, i).toLowerCase() : ''
    if (SCHEMES.has(scheme)) {
      // `Bearer <credential>`: the credential may hold = + / . : and runs to a space or quote.
      const from = skipGap(text, i, MAX_GAP)
      let to = from
      while (to < n && !isSpaceOrQuote(text.charCodeAt(to))) to++
      // A `Token` needs a credential-length word after it, so "token expired" stays readable.
      if (from > i && to > from && (scheme !== 'token' || to - from >= 6)) {
        parts.push(text.slice(last, from), REDACTED)
        last = i = to
      }
      continue
    }
    const end = formatEnd(text, start, i)
    if (end !== -1 || isKeyShaped(text, start, i, secretPrefixes)) {
      const keep = text.startsWith('sk-', start) || text.startsWith('SK-', start) ? text.slice(start, start + 3) : ''
      parts.push(text.slice(last, start), keep, REDACTED)
      last = i = Math.max(end, i)
    }
  }
  if (!parts.length) return text
  parts.push(text.slice(last))
  return parts.join('')
}

/**
 * Where a well-known token format found at a word start in `[start, end)` ends: `end` for
 * most, further for a JWT (its dotted segments); `-1` when there is none.
 */
function formatEnd(text: string, start: number, end: number): number {
  for (let k = start; k < end; k++) {
    if (k > start) {
      // A word starts after a hyphen or a star inside the token.
      const c = text.charCodeAt(k - 1)
      if (c !== 45 && c !== 42) continue
    }
    for (const [prefix, minLength] of WORD_FORMATS) {
      if (end - k < minLength || !text.startsWith(prefix, k)) continue
      if (prefix !== 'eyJ') return end
      // header.payload.signature: take the next two dotted segments too.
      let to = end
      for (let segment = 0; segment < 2 && to + 1 < text.length && text.charCodeAt(to) === 46 && isTokenChar(text.charCodeAt(to + 1)); segment++) {
        to++
        while (to < text.length && isTokenChar(text.charCodeAt(to))) to++
      }
      return to
    }
  }
  return -1
}

function isKeyShaped(text: string, start: number, end: number, secretPrefixes: readonly string[]): boolean {
  const length = end - start
  for (const prefix of secretPrefixes) if (text.startsWith(prefix, start)) return true
  if (length < 8) return false
  let stars = 0
  let run = 0
  let letters = 0
  let digits = 0
  for (let k = start; k < end; k++) {
    const c = text.charCodeAt(k)
    if (c === 42 /* * */) {
      if (++stars >= 2) return true
    } else stars = 0
    if (isDigit(c)) {
      digits++
      run++
    } else if (isLetter(c)) {
      letters++
      run++
    } else {
      run = 0
      letters = 0
      digits = 0
    }
    if (run >= KEY_RUN_LENGTH && letters > 0 && digits > 0) return true
  }
  const head = text.slice(start, start + 11).toLowerCase()
  for (const [prefix, minLength] of START_PREFIXES) if (length >= minLength && head.startsWith(prefix)) return true
  return false
}

function skipGap(text: string, from: number, max: number): number {
  let j = from
  while (j < text.length && j - from < max && (text.charCodeAt(j) === 32 || text.charCodeAt(j) === 9)) j++
  return j
}

function isNameChar(c: number): boolean {
  return isAlnum(c) || c === 95 /* _ */ || c === 45 /* - */ || c === 46 /* . */ || c === 37 /* % */ || c === 91 /* [ */ || c === 93 /* ] */
}

/** An unquoted credential value runs to a space, a quote, a comma or a semicolon. */
function isValueEnd(c: number): boolean {
  return c === 44 /* , */ || c === 59 /* ; */ || isSpace(c) || isQuote(c)
}

/** A query value also ends at the next parameter (&), the fragment (#) or a closing bracket. */
function isQueryValueEnd(c: number): boolean {
  return c === 38 /* & */ || c === 35 /* # */ || c === 41 /* ) */ || c === 125 /* } */ || isValueEnd(c) || isSpaceOrQuote(c)
}

function isQuotedValueEnd(c: number, quote: number): boolean {
  return c === quote || c === 10 || c === 13
}

function isTokenChar(c: number): boolean {
  return isAlnum(c) || c === 95 /* _ */ || c === 45 /* - */ || c === 42 /* * */
}

function isAlnum(c: number): boolean {
  return isDigit(c) || isLetter(c)
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57
}

function isLetter(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122)
}

function isQuote(c: number): boolean {
  return c === 34 /* " */ || c === 39 /* ' */
}

function isHighSurrogate(c: number): boolean {
  return c >= 0xd800 && c <= 0xdbff
}

/** Whitespace as a regular expression's \s sees it. */
function isSpace(c: number): boolean {
  return (c >= 9 && c <= 13) || c === 32 || c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a)
    || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff
}

function isSpaceOrQuote(c: number): boolean {
  return isSpace(c) || isQuote(c) || c === 60 /* < */ || c === 62 /* > */ || c === 96 /* ` */
}
