// Text a peer chose (an MCP server, an A2A remote, an ACP agent, a model), made safe to show to a
// model or a person: the one rule for every door where such text enters. One left-to-right scan,
// no regular expression: time is linear in the text.
//
// Removed:
//   - escape sequences whole: 7-bit (ESC [ … final, ESC ] … BEL/ST, DCS/SOS/PM/APC, ESC + intermediates
//     + final) and 8-bit (U+009B CSI, U+009D OSC, U+0090 DCS, U+0098/U+009E/U+009F); a string sequence
//     that never ends stops at the next newline, so it cannot hide the rest of a text;
//   - every other C0 control but tab and newline, DEL, every C1 control; `\r\n` becomes `\n`, a lone
//     `\r` (which lets text overwrite a line) goes;
//   - bidirectional controls (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), which reorder
//     what is shown ("invoice\u202Efdp.exe" reads as "invoiceexe.pdf");
//   - invisible characters that hide text: zero-width space U+200B, word joiner and invisible
//     operators U+2060–U+2064, U+FEFF, tag characters U+E0000–U+E007F (invisible text a model still
//     reads), and zero-width (non-)joiners U+200C/U+200D unless both neighbours are visible non-ASCII
//     characters (emoji sequences, Indic and Arabic scripts need them; "ad\u200Dmin" does not).
// Line and paragraph separators (U+2028, U+2029) become a newline.
//
// `quotedLines` is the other half, for text we frame (an inbox item under its `[from …]` label, a
// background result under its header, a child's question above our reply instruction): every line of
// it starts with "> ", so our framing lines stay the only ones at column 0 and none can be forged.

const ESC = 0x1b
const BEL = 0x07

export interface PeerTextOptions {
  /** One line (a label, a name, a title): newlines and tabs become spaces. */
  oneLine?: boolean
  /** Keep 7-bit colour and style sequences (ESC [ … m) for a log line whose colours are our own logger's. */
  keepStyle?: boolean
}

/** Text from a peer without escape sequences, control, bidi or hiding characters; newlines and tabs kept. */
export function peerText(text: string, options: PeerTextOptions = {}): string {
  return scrub(text, options.oneLine === true, options.keepStyle === true)
}

/** `peerText` on one line: newlines and tabs become spaces. */
export function peerLine(text: string): string {
  return scrub(text, true, false)
}

/**
 * True for a UTF-16 code unit `peerText` removes wherever it stands (joiners, removed only in
 * context, and the surrogate halves of tag characters are not included).
 */
export function isPeerControl(c: number): boolean {
  return c < 0x20 ? c !== 9 && c !== 10 : (c >= 0x7f && c <= 0x9f) || isBidiControl(c) || isInvisible(c) || c === 0x2028 || c === 0x2029
}

function scrub(text: string, oneLine: boolean, keepStyle: boolean): string {
  let out = ''
  let kept = 0
  let i = 0
  let last = 0
  const n = text.length
  const drop = (from: number, to: number, replacement = '') => {
    out += text.slice(kept, from) + replacement
    kept = to
  }
  while (i < n) {
    const c = text.charCodeAt(i)
    if (c === ESC || c === 0x9b || c === 0x9d || c === 0x90 || c === 0x98 || c === 0x9e || c === 0x9f) {
      const end = sequenceEnd(text, i)
      const style = keepStyle && c === ESC && text.charCodeAt(i + 1) === 0x5b && text.charCodeAt(end - 1) === 0x6d /* m */
      if (!style) drop(i, end)
      i = end
      continue
    }
    let width = 1
    if (c === 10 || c === 9 || c === 0x2028 || c === 0x2029) {
      if (oneLine) drop(i, i + 1, ' ')
      else if (c > 10) drop(i, i + 1, '\n')
      last = 10
    } else if (c === 0x200c || c === 0x200d) {
      if (!joins(last, text.charCodeAt(i + 1))) drop(i, i + 1)
    } else if (c === 0xdb40 && isTagLow(text.charCodeAt(i + 1))) {
      width = 2
      drop(i, i + 2)
    } else if (c < 0x20 || (c >= 0x7f && c <= 0x9f) || isBidiControl(c) || isInvisible(c)) {
      drop(i, i + 1)
    } else {
      last = c
    }
    i += width
  }
  return kept === 0 ? text : out + text.slice(kept)
}

/** A joiner between `before` (the last character kept) and `after` joins two visible non-ASCII characters. */
function joins(before: number, after: number): boolean {
  return before >= 0xa0 && after >= 0xa0 && !isPeerControl(after) && after !== 0x200c && after !== 0x200d
}

/** Index just past the escape sequence starting at `start` (7-bit ESC form or 8-bit C1 form). */
function sequenceEnd(text: string, start: number): number {
  const n = text.length
  let c = text.charCodeAt(start)
  let i = start + 1
  let kind: 'csi' | 'string'
  if (c === ESC) {
    if (i >= n) return i
    c = text.charCodeAt(i)
    i++
    if (c === 0x5b /* [ */) kind = 'csi'
    else if (c === 0x5d /* ] */ || c === 0x50 /* P */ || c === 0x58 /* X */ || c === 0x5e /* ^ */ || c === 0x5f /* _ */) kind = 'string'
    else {
      // ESC, intermediates (0x20-0x2f), then one final character (e.g. ESC ( B, ESC c).
      if (c < 0x20) return i - 1 // a lone ESC before a control character: drop only the ESC
      while (c >= 0x20 && c <= 0x2f && i < n) c = text.charCodeAt(i++)
      return i
    }
  } else {
    kind = c === 0x9b ? 'csi' : 'string'
  }
  if (kind === 'csi') {
    // Parameters and intermediates (0x20-0x3f), then a final byte (0x40-0x7e).
    while (i < n) {
      const d = text.charCodeAt(i++)
      if (d >= 0x40 && d <= 0x7e) return i
      if (d < 0x20 || d > 0x3f) return i - 1 // malformed: stop before the stray character
    }
    return n
  }
  // String sequences (OSC, DCS, SOS, PM, APC) end at BEL or ST (ESC \ or U+009C), and at a newline here.
  while (i < n) {
    const d = text.charCodeAt(i)
    if (d === BEL || d === 0x9c) return i + 1
    if (d === ESC) return i + 1 < n && text.charCodeAt(i + 1) === 0x5c ? i + 2 : i + 1
    if (d === 10) return i
    i++
  }
  return n
}

function isBidiControl(c: number): boolean {
  return (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) || c === 0x200e || c === 0x200f || c === 0x061c
}

function isInvisible(c: number): boolean {
  return c === 0x200b || (c >= 0x2060 && c <= 0x2064) || c === 0xfeff
}

/** The low surrogate of a tag character U+E0000–U+E007F (high surrogate U+DB40). */
function isTagLow(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdc7f
}

/** The name older callers use: `peerText` (multi-line; newlines and tabs kept). */
export function stripControl(text: string): string {
  return scrub(text, false, false)
}

/**
 * `text` (a sender's: a child's message, result or question) quoted line by line, to show inside framing of
 * ours: each line gets "> " in front (an empty line, ">"), so no part of it starts a line. Every line break
 * counts (\n, \r\n, a lone \r, \v, \f, U+0085, U+2028, U+2029) and becomes \n. One scan, no regular expression.
 * With `maxChars`, the quoted text is cut to at most that many characters (never half a surrogate pair), and a line of
 * ours says so.
 */
export function quotedLines(text: string, maxChars = Infinity): string {
  // Quoting never shortens a text: a head of `maxChars` characters is all that can be shown.
  const quoted = quoteAll(text.length > maxChars ? text.slice(0, maxChars) : text)
  if (quoted.length <= maxChars) return quoted
  const code = quoted.charCodeAt(maxChars - 1)
  const end = code >= 0xd800 && code <= 0xdbff ? maxChars - 1 : maxChars
  return `${quoted.slice(0, end)}\n\n[Text cut to ${maxChars} characters to fit one message.]`
}

function quoteAll(text: string): string {
  let out = ''
  let start = 0
  const n = text.length
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i)
    if (!isLineBreak(c)) continue
    out += quoteLine(text.slice(start, i)) + '\n'
    if (c === 13 && text.charCodeAt(i + 1) === 10) i++
    start = i + 1
  }
  return out + quoteLine(text.slice(start))
}

function quoteLine(line: string): string {
  return line ? `> ${line}` : '>'
}

/** \n, \v, \f, \r, NEL, and the line and paragraph separators: what a reader may take for a new line. */
function isLineBreak(c: number): boolean {
  return (c >= 10 && c <= 13) || c === 0x85 || c === 0x2028 || c === 0x2029
}
