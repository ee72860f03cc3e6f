// Text that came from a model or an agent, made safe to print on a terminal: escape sequences
// (CSI, OSC such as the clipboard write OSC 52 or a window title, DCS, …), other control
// characters, carriage returns and bidirectional overrides are removed. One linear scan.

const ESC = 0x1b
const BEL = 0x07

/**
 * Multi-line text (an answer): keeps `\n` and `\t`, drops every other control character and
 * every escape sequence whole. `\r\n` becomes `\n`; a lone `\r` (which would let text overwrite
 * the line) is dropped.
 */
export function terminalText(text: string): string {
  return scrub(text, false, false)
}

/**
 * A log line for stderr: as `terminalText`, but colour/style sequences (CSI … `m`) are kept, so
 * the logger's own colours survive. A logged diagnostic can quote a server or a model; anything
 * that moves the cursor, erases, sets a title or writes the clipboard is removed.
 */
export function terminalLog(text: string): string {
  return scrub(text, false, true)
}

/** One-line text (a label, a tool name, a diagnostic): as `terminalText`, with newlines and tabs as spaces. */
export function terminalLine(text: string): string {
  return scrub(text, true, false)
}

function scrub(text: string, oneLine: boolean, keepStyle: boolean): string {
  let out = ''
  let kept = 0
  let i = 0
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
    } else if (c === 10 || c === 9) {
      if (oneLine) drop(i, i + 1, ' ')
      i++
    } else if (c < 0x20 || (c >= 0x7f && c <= 0x9f) || isBidiControl(c)) {
      drop(i, i + 1)
      i++
    } else {
      i++
    }
  }
  return kept === 0 ? text : out + text.slice(kept)
}

/** Index just past the escape sequence starting at `start` (7-bit ESC form or 8-bit C1 form). */
function sequenceEnd(text: string, start: number): number {
  const n = text.length
  let c = text.charCodeAt(start)
  let i = start + 1
  let kind: 'csi' | 'string' | 'single'
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
  // String sequences (OSC, DCS, SOS, PM, APC) end at BEL, ST (ESC \ or 0x9c); we also end them at a
  // newline, so an unterminated sequence cannot hide the rest of an answer.
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

/**
 * `JSON.stringify` on one line, with C1 controls, DEL, line/paragraph separators and bidi
 * controls written as `\uXXXX` escapes too (JSON.stringify escapes only C0): the data is exact,
 * and printing the line on a terminal runs no escape sequence.
 */
export function jsonLine(value: unknown): string {
  return JSON.stringify(value).replace(/[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g,
    (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`)
}
