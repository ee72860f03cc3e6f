// Secret redaction for diagnostics and log lines. Every pass is a single left-to-right scan
// (no backtracking regular expressions), so hostile text costs time linear in its length.
// Callers cap the text first (`capForRedaction`).

export const REDACTED = '[redacted]'

/** Shortest configured secret that is matched literally (shorter ones would mask ordinary words). */
const MIN_SECRET_LENGTH = 4
/** A configured secret this long also masks any token that starts with its first 8 characters (partial echoes). */
const PREFIX_SECRET_LENGTH = 16
/** An unbroken run of letters and digits (with both) this long is treated as a key. */
const KEY_RUN_LENGTH = 24
/** Key prefixes of common providers; a token starting with one and at least this long is masked. */
const KEY_PREFIXES = ['sk-', 'sk_', 'pk-', 'pk_', 'rk-', 'rk_', 'gsk_', 'xai-', 'aiza', 'ghp_', 'gho_', 'ghu_', 'ghs_', 'github_pat_', 'glpat-', 'hf_', 'xoxb-', 'xoxp-', 'xoxa-', 'key-', 'api-', 'token-']
const KEY_PREFIX_MIN_LENGTH = 12
/** Parameter names whose values are masked even outside a URL query (`api_key=…`, `token: …`). */
const SECRET_NAMES = ['key', 'token', 'secret', 'password', 'passwd', 'pwd', 'auth', 'authorization', 'signature', 'sig', 'credential', 'credentials', 'session', 'cookie']

/**
 * Removes secrets from `text`: every occurrence of a configured secret (and its URL-encoded
 * form), user info in URLs (`scheme://user:pass@`), every query-parameter value, values of
 * secret-named parameters (`api_key=…`, `"token": "…"`), `Bearer`/`Basic` credentials, and
 * key-shaped tokens (provider prefixes such as `sk-`, masked echoes like `abc****wxyz`, long runs
 * mixing letters and digits, tokens starting with a configured secret's first 8 characters).
 */
export function redact(text: string, secrets: readonly string[] = []): string {
  const literal = expandSecrets(secrets)
  let out = replaceLiterals(text, literal)
  out = redactUserinfo(out)
  out = redactParameters(out)
  return redactTokens(out, literal.filter((s) => s.length >= PREFIX_SECRET_LENGTH).map((s) => s.slice(0, 8)))
}

/**
 * The first `limit` characters of `text`, minus a trailing partial token (which could be the
 * head of a secret cut in two, no longer recognisable). Use before `redact` on untrusted text.
 */
export function capForRedaction(text: string, limit: number): string {
  if (text.length <= limit) return text
  let end = limit
  while (end > 0 && isTokenChar(text.charCodeAt(end - 1))) end--
  return `${text.slice(0, end)}…`
}

function expandSecrets(secrets: readonly string[]): string[] {
  const set = new Set<string>()
  for (const secret of secrets) {
    if (typeof secret !== 'string' || secret.length < MIN_SECRET_LENGTH) continue
    set.add(secret)
    const encoded = encodeURIComponent(secret)
    if (encoded !== secret) set.add(encoded)
  }
  return [...set].sort((a, b) => b.length - a.length)
}

function replaceLiterals(text: string, secrets: readonly string[]): string {
  let out = text
  for (const secret of secrets) out = replaceAll(out, secret)
  return out
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

/** `scheme://user:pass@host` → `scheme://[redacted]@host`. */
function redactUserinfo(text: string): string {
  const parts: string[] = []
  let last = 0
  let i = text.indexOf('://')
  while (i !== -1) {
    const start = i + 3
    let j = start
    // The authority ends at the first of / ? # @, whitespace or a quote; each scan ends before the next "://".
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
  return c === 47 /* / */ || c === 63 /* ? */ || c === 35 /* # */ || c === 64 /* @ */ || isSpaceOrQuote(c)
}

/**
 * Values of query parameters (`?a=1&b=2`) and of secret-named parameters anywhere
 * (`api_key=…`, `token: …`, `"password":"…"`).
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
    const inQuery = before === 63 /* ? */ || before === 38 /* & */ || before === 59 /* ; */
    // name=value (query or secret name), or a secret name followed by `: ` / `":"` (JSON, headers).
    let j = i
    if (j < n && text.charCodeAt(j) === 34 /* " */) j++
    let separator = false
    if (j < n && text.charCodeAt(j) === 61 /* = */) {
      separator = true
      j++
    } else if (j < n && text.charCodeAt(j) === 58 /* : */ && !text.startsWith('//', j + 1)) {
      separator = true
      j++
      while (j < n && text.charCodeAt(j) === 32) j++
    }
    if (!separator || !(inQuery && text.charCodeAt(j - 1) === 61) && !isSecretName(text, nameStart, i)) continue
    const quoted = j < n && text.charCodeAt(j) === 34
    if (quoted) j++
    const valueStart = j
    while (j < n && !isValueEnd(text.charCodeAt(j), quoted)) j++
    const scheme = j - valueStart <= 6 ? text.slice(valueStart, j).toLowerCase() : ''
    if (scheme === 'bearer' || scheme === 'basic') {
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

function isSecretName(text: string, start: number, end: number): boolean {
  // Only the tail matters (`x-api-key`, `OPENAI_API_KEY`, `access_token`); bounded work per name.
  const tail = text.slice(Math.max(start, end - 16), end).toLowerCase()
  for (const name of SECRET_NAMES) {
    if (tail === name || tail.endsWith(`_${name}`) || tail.endsWith(`-${name}`) || tail.endsWith(`.${name}`) || (name.length > 3 && tail.endsWith(name))) return true
  }
  return false
}

function isNameChar(c: number): boolean {
  return isAlnum(c) || c === 95 /* _ */ || c === 45 /* - */ || c === 46 /* . */ || c === 37 /* % */ || c === 91 /* [ */ || c === 93 /* ] */
}

function isValueEnd(c: number, quoted: boolean): boolean {
  if (quoted) return c === 34 || c === 10 || c === 13
  return c === 38 /* & */ || c === 35 /* # */ || c === 44 /* , */ || c === 59 /* ; */ || c === 41 /* ) */ || c === 125 /* } */ || isSpaceOrQuote(c)
}

/** Bearer/Basic credentials and key-shaped tokens. */
function redactTokens(text: string, secretPrefixes: readonly string[]): string {
  const parts: string[] = []
  let last = 0
  let i = 0
  const n = text.length
  let previous = ''
  let previousEnd = -1
  while (i < n) {
    if (!isTokenChar(text.charCodeAt(i))) {
      i++
      continue
    }
    const start = i
    while (i < n && isTokenChar(text.charCodeAt(i))) i++
    const afterScheme = (previous === 'bearer' || previous === 'basic') && onlySpaces(text, previousEnd, start)
    if (afterScheme || isKeyShaped(text, start, i, secretPrefixes)) {
      const lower = text.slice(start, Math.min(i, start + 3)).toLowerCase()
      const keep = !afterScheme && lower === 'sk-' ? 'sk-' : ''
      parts.push(text.slice(last, start), keep, REDACTED)
      last = i
      // A Basic/Bearer credential may contain = + / . : consume up to the next space or quote.
      if (afterScheme) {
        while (i < n && !isSpaceOrQuote(text.charCodeAt(i))) i++
        last = i
      }
    }
    previous = i - start <= 6 ? text.slice(start, i).toLowerCase() : ''
    previousEnd = i
  }
  if (!parts.length) return text
  parts.push(text.slice(last))
  return parts.join('')
}

function onlySpaces(text: string, from: number, to: number): boolean {
  if (to - from < 1 || to - from > 4) return false
  for (let k = from; k < to; k++) if (text.charCodeAt(k) !== 32 && text.charCodeAt(k) !== 9) return false
  return true
}

function isKeyShaped(text: string, start: number, end: number, secretPrefixes: readonly string[]): boolean {
  const length = end - start
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
  if (length >= KEY_PREFIX_MIN_LENGTH) {
    const head = text.slice(start, start + 11).toLowerCase()
    for (const prefix of KEY_PREFIXES) if (head.startsWith(prefix)) return true
  }
  if (text.startsWith('sk-', start) && length >= 9) return true
  for (const prefix of secretPrefixes) if (text.startsWith(prefix, start)) return true
  return false
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

function isSpaceOrQuote(c: number): boolean {
  return c === 32 || c === 9 || c === 10 || c === 13 || c === 34 || c === 39 || c === 60 /* < */ || c === 62 /* > */ || c === 96 /* ` */
}
