// Text that came from a model or an agent, made safe to print on a terminal. The rule (escape
// sequences, control, bidi and hiding characters out) is shared's `peerText`, the one sanitizer
// for text from peers; this module only names the three ways the CLI prints.
import { isPeerControl, peerLine, peerText } from '@cordis-subagents/shared'

/** Multi-line text (an answer): `peerText`, newlines and tabs kept, `\r\n` as `\n`. */
export function terminalText(text: string): string {
  return peerText(text)
}

/**
 * A log line for stderr: as `terminalText`, but colour/style sequences (CSI … `m`) are kept, so
 * the logger's own colours survive. A logged diagnostic can quote a server or a model; anything
 * that moves the cursor, erases, sets a title or writes the clipboard is removed.
 */
export function terminalLog(text: string): string {
  return peerText(text, { keepStyle: true })
}

/** One-line text (a label, a tool name, a diagnostic): as `terminalText`, with newlines and tabs as spaces. */
export function terminalLine(text: string): string {
  return peerLine(text)
}

/**
 * `JSON.stringify` on one line, with every character `peerText` would remove (C1 controls, DEL,
 * line/paragraph separators, bidi and invisible characters) written as a `\uXXXX` escape too
 * (JSON.stringify escapes only C0): the data is exact, and printing the line runs no escape sequence.
 */
export function jsonLine(value: unknown): string {
  const text = JSON.stringify(value)
  let out = ''
  let kept = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    const tag = c === 0xdb40 && isTagLow(text.charCodeAt(i + 1))
    if (!tag && !isPeerControl(c) && c !== 0x200c && c !== 0x200d) continue
    out += `${text.slice(kept, i)}${escaped(c)}${tag ? escaped(text.charCodeAt(++i)) : ''}`
    kept = i + 1
  }
  return kept === 0 ? text : out + text.slice(kept)
}

function escaped(c: number): string {
  return `\\u${c.toString(16).padStart(4, '0')}`
}

function isTagLow(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdc7f
}
