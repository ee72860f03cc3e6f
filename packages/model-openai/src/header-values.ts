// What fetch can send as the value of an HTTP header (the Fetch standard, as Node's undici applies it): a ByteString
// (every UTF-16 code unit at most U+00FF, else `Cannot convert argument to a ByteString`), which once stripped of
// leading and trailing HTTP whitespace (tab, LF, CR, space) holds no CR, LF or NUL. Checked at load, so a value fetch
// would refuse fails the load naming its field, instead of every call failing without reaching the server.

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
const BEARER = 'Bearer '

const isHttpWhitespace = (code: number) => code === 0x09 || code === 0x0a || code === 0x0d || code === 0x20

/** Where the value fetch sends starts and ends: without leading and trailing HTTP whitespace. */
function sentBounds(value: string): [number, number] {
  let start = 0
  let end = value.length
  while (start < end && isHttpWhitespace(value.charCodeAt(start))) start++
  while (end > start && isHttpWhitespace(value.charCodeAt(end - 1))) end--
  return [start, end]
}

/** The header value as fetch sends it (leading and trailing HTTP whitespace stripped), which is what a server can echo. */
export function sentHeaderValue(value: string): string { return value.slice(...sentBounds(value)) }

const codePoint = (code: number) => `U+${code.toString(16).toUpperCase().padStart(4, '0')}`

/**
 * Why fetch would refuse `value` as a header value, or undefined when it can send it. The text never quotes the
 * value (it may be a secret): it names the position (1-based, counted after `offset` characters of a prefix the
 * caller adds, such as `Bearer `) and, for a character above U+00FF, its code point.
 */
function headerValueProblem(value: string, offset = 0): string | undefined {
  for (let index = offset; index < value.length; index++) {
    const code = value.charCodeAt(index)
    if (code > 0xff) {
      return `has character ${index - offset + 1} ${codePoint(code)}, which an HTTP header cannot carry (only U+0000-U+00FF; `
        + 'often a dash or quote pasted with it). Type it again in plain ASCII'
    }
  }
  const [start, end] = sentBounds(value)
  for (let index = start; index < end; index++) {
    const code = value.charCodeAt(index)
    if (code === 0x0a || code === 0x0d || code === 0x00) {
      const what = code === 0x00 ? 'a NUL' : 'a line break'
      return `holds ${what} at character ${index - offset + 1}, which an HTTP header value cannot carry inside it. Remove it`
    }
  }
  return undefined
}

/**
 * Why fetch could not send these headers, or undefined: each configured header's name and value, and the key as
 * `Authorization: Bearer <key>` (no header when it is empty). `keyField` names where the key came from, as the
 * message should say it (`config "apiKey"`, `OPENAI_API_KEY (…)`); headers are named `<headersField> value of "X"`.
 */
export function headersProblem(apiKey: string, headers: Record<string, unknown> | undefined,
  fields: { key: string; headers: string }): string | undefined {
  for (const [header, value] of Object.entries(headers ?? {})) {
    if (!TOKEN.test(header)) return `${fields.headers} has an invalid header name ${JSON.stringify(header)}.`
    if (typeof value !== 'string') return `${fields.headers} has a value for "${header}" that is not a string.`
    const problem = headerValueProblem(value)
    if (problem) return `${fields.headers} value of "${header}" ${problem}.`
  }
  const keyProblem = apiKey ? headerValueProblem(`${BEARER}${apiKey}`, BEARER.length) : undefined
  return keyProblem && `${fields.key} ${keyProblem}; it is sent in the Authorization header.`
}
