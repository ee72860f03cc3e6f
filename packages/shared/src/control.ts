/**
 * Terminal escapes and control characters out of text someone else chose, before it reaches a
 * terminal or a log.
 */

// ANSI escape sequences (CSI, OSC, and two-character escapes), then every other control
// character except newline and tab. Bounded repetitions keep them linear.
const ANSI = /\x1b\[[0-?]{0,64}[ -/]{0,16}[@-~]?|\x1b\][^\x07\x1b]{0,2048}(?:\x07|\x1b\\)?|\x1b[@-_]?|\x9b[0-?]{0,64}[ -/]{0,16}[@-~]?/g
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]/g

/**
 * Removes terminal escape sequences and control characters (keeps newline and tab; a carriage
 * return is dropped, so "progress\rbar" cannot overwrite a line on a terminal).
 */
export function stripControl(text: string): string {
  return text.replace(ANSI, '').replace(CONTROL, '')
}
