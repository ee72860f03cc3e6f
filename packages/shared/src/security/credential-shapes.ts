/**
 * Credential shapes recognisable without knowing the secret: URL user info, query values,
 * credential-named parameters, authorization schemes and key-shaped tokens. Each pass is a single
 * left-to-right scan over the text, so time is linear in its length.
 */

export const REDACTED = '[redacted]'

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
/** Whether a name (a header, a variable, a parameter) names a credential: its value is a secret. */
export function isCredentialName(name: string): boolean {
  return CREDENTIAL_WORDS.test(name)
}

/**
 * Values that say whether something is set, never what it is (`ANTHROPIC_API_KEY: true` in advice,
 * `GH_TOKEN=set` in a listing): not credentials, so neither masked after a credential name nor
 * taken as a configured secret (a scrubbed "true" would hide every "true" in a text).
 */
const PLACEHOLDER_VALUE = /^(?:true|false|yes|no|on|off|null|none|undefined|set|unset|empty|missing)$/i

export function isPlaceholderValue(value: string): boolean {
  return value.length <= 9 && PLACEHOLDER_VALUE.test(value)
}

/** A variable name (`GITHUB_PAT_TOKEN`): upper-case words of at most 16 characters joined by `_`. */
const VARIABLE_NAME = /^[A-Z][A-Z0-9]{0,15}(?:_[A-Z0-9]{1,16})+$/

/** Authorization schemes whose credential follows after spaces (`Bearer …`). */
const SCHEMES = new Set(['bearer', 'basic', 'token'])

/**
 * `text` with user info, query values, credential-named values, `Bearer` credentials and
 * key-shaped tokens masked; `secretPrefixes` (8 characters each) mark echoes of long secrets.
 */
export function redactCredentialShapes(text: string, secretPrefixes: readonly string[]): string {
  return redactTokens(redactParameters(redactUserinfo(text)), secretPrefixes)
}

/** The copy of a text with ranges replaced, built in one pass (ranges come in order, never overlapping). */
export class Splice {
  private readonly parts: string[] = []
  private last = 0

  constructor(private readonly text: string) {}

  replace(from: number, to: number, replacement = REDACTED) {
    this.parts.push(this.text.slice(this.last, from), replacement)
    this.last = to
  }

  result(): string {
    if (!this.parts.length) return this.text
    this.parts.push(this.text.slice(this.last))
    return this.parts.join('')
  }
}

/** `scheme://user:pass@host` (the user or the password may be missing) → `scheme://[redacted]@host`. */
function redactUserinfo(text: string): string {
  const out = new Splice(text)
  let i = text.indexOf('://')
  while (i !== -1) {
    const start = i + 3
    // User info ends at the "@"; the authority at the first / or space. A "?" or "#" may be part
    // of a password, so they do not end it. Each scan ends before the next "://" (at its "/").
    const j = skipUntil(text, start, isAuthorityEnd)
    if (j < text.length && text.charCodeAt(j) === 64 /* @ */ && j > start) out.replace(start, j)
    i = text.indexOf('://', Math.max(j, start))
  }
  return out.result()
}

function isAuthorityEnd(c: number): boolean {
  return c === 47 /* / */ || c === 64 /* @ */ || isSpaceOrQuote(c)
}

/**
 * Values of query parameters (`?a=1&b=2`) and of credential-named parameters anywhere
 * (`api_key=…`, `DB_PASS = …`, `token: …`, `"password":"…"`).
 */
function redactParameters(text: string): string {
  return scanRuns(text, isNameChar, (nameStart, nameEnd, out) => {
    const n = text.length
    const before = nameStart > 0 ? text.charCodeAt(nameStart - 1) : 0
    const inQuery = before === 63 /* ? */ || before === 38 /* & */ || before === 59 /* ; */ || before === 35 /* # */
    // name=value, name: value, "name": "value", 'name' = value; a scheme (`https://`) is not a name.
    let j = nameEnd
    if (j < n && isQuote(text.charCodeAt(j))) j++
    j = skipGap(text, j, MAX_GAP)
    const separator = j < n ? text.charCodeAt(j) : 0
    if (separator !== 61 /* = */ && !(separator === 58 /* : */ && !text.startsWith('//', j + 1))) return nameEnd
    j = skipGap(text, j + 1, n)
    const queryValue = inQuery && separator === 61
    if (!queryValue && !isSecretName(text, nameStart, nameEnd)) return nameEnd
    const quote = j < n && isQuote(text.charCodeAt(j)) ? text.charCodeAt(j) : 0
    if (quote) j++
    const valueStart = j
    if (quote) j = skipUntil(text, j, (c) => c === quote || c === 10 || c === 13)
    else j = skipUntil(text, j, queryValue ? isQueryValueEnd : isValueEnd)
    // `Authorization: Bearer …`: the token pass masks the credential after the scheme word.
    if (!quote && isSchemeBeforeCredential(text, valueStart, j)) return j
    // `KEY: true`, `KEY=set.`: a placeholder word followed by punctuation or nothing.
    const word = skipWhile(text, valueStart, isLetter)
    const onlyPunctuationAfter = skipWhile(text, word, (c) => !isAlnum(c)) >= j
    if (word > valueStart && onlyPunctuationAfter && isPlaceholderValue(text.slice(valueStart, Math.min(word, valueStart + 10)))) return j
    if (j > valueStart && !text.startsWith(REDACTED, valueStart)) out.replace(valueStart, j)
    return j
  })
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
  return scanRuns(text, isTokenChar, (start, end, out) => {
    const scheme = end - start <= 6 ? text.slice(start, end).toLowerCase() : ''
    if (SCHEMES.has(scheme)) {
      // `Bearer <credential>`: the credential may hold = + / . : and runs to a space or quote.
      const from = skipGap(text, end, MAX_GAP)
      // No gap after the word: not a credential. Return before scanning on, so a text of
      // scheme words without spaces stays linear.
      if (from === end) return end
      const to = skipUntil(text, from, isSpaceOrQuote)
      // A `Token` needs a credential-length word after it, so "token expired" stays readable.
      if (from > end && to > from && (scheme !== 'token' || to - from >= 6)) {
        out.replace(from, to)
        return to
      }
      return end
    }
    const formatTo = formatEnd(text, start, end)
    if (formatTo === -1 && !isKeyShaped(text, start, end, secretPrefixes)) return end
    const keep = text.startsWith('sk-', start) || text.startsWith('SK-', start) ? text.slice(start, start + 3) : ''
    const to = Math.max(formatTo, end)
    out.replace(start, to, keep + REDACTED)
    return to
  })
}

/**
 * One left-to-right pass: `visit` sees each maximal run of characters passing `isChar`, may
 * replace ranges from the run's start on, and returns where the scan goes on (at least the run's end).
 */
function scanRuns(text: string, isChar: (c: number) => boolean, visit: (start: number, end: number, out: Splice) => number): string {
  const out = new Splice(text)
  let i = 0
  while ((i = skipUntil(text, i, isChar)) < text.length) {
    const start = i
    i = visit(start, skipWhile(text, i, isChar), out)
  }
  return out.result()
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
      const dotThenToken = () => to + 1 < text.length && text.charCodeAt(to) === 46 && isTokenChar(text.charCodeAt(to + 1))
      for (let segment = 0; segment < 2 && dotThenToken(); segment++) {
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
  // The provider prefixes are matched case-insensitively, so a variable's name (`GITHUB_PAT_TOKEN`,
  // `SK_LIVE_KEY`) would look like one: names stay readable.
  if (length <= 64 && VARIABLE_NAME.test(text.slice(start, end))) return false
  const head = text.slice(start, start + 11).toLowerCase()
  for (const [prefix, minLength] of START_PREFIXES) if (length >= minLength && head.startsWith(prefix)) return true
  return false
}

/** The first index from `from` whose character satisfies `test` (the text's length when none does). */
function skipUntil(text: string, from: number, test: (c: number) => boolean): number {
  let i = from
  while (i < text.length && !test(text.charCodeAt(i))) i++
  return i
}

/** The first index from `from` whose character does not satisfy `test`. */
function skipWhile(text: string, from: number, test: (c: number) => boolean): number {
  let i = from
  while (i < text.length && test(text.charCodeAt(i))) i++
  return i
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

export function isTokenChar(c: number): boolean {
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

export function isHighSurrogate(c: number): boolean {
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
