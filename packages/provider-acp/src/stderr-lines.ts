import { headChars } from '@cordis-subagents/shared'

/** Characters of one stderr line logged (longer ones are cut, marked `…`). */
const LOG_LINE_LIMIT = 2000
/** Bytes of a line kept: they decode to more than LOG_LINE_LIMIT characters (UTF-8 takes at most 3 bytes a UTF-16 unit). */
const LOG_LINE_BYTES = LOG_LINE_LIMIT * 4
/** Stderr lines logged per process; a flood is summarised by one final line. */
export const LOG_LINES = 500

/**
 * An agent's stderr as log lines: split on the newline byte and each line decoded whole, so a character the child
 * wrote in two pieces (two chunks) is one character here, never two U+FFFD. Bounded: only the first LOG_LINE_BYTES of
 * a line are kept and decoded, and at most LOG_LINES lines are handed on (then one line says so).
 */
export class StderrLines {
  /** The bytes of the line not ended yet, copied out of their chunks. */
  private partial: Buffer[] = []
  private partialBytes = 0
  private logged = 0

  constructor(private readonly onLine: (line: string) => void) {}

  /** True once LOG_LINES lines were handed on: nothing more is read. */
  get full(): boolean {
    return this.logged > LOG_LINES
  }

  /** Feed every stderr chunk, in order. */
  push(chunk: Buffer): void {
    let start = 0
    while (start < chunk.length && !this.full) {
      const newline = chunk.indexOf(0x0a, start)
      const end = newline < 0 ? chunk.length : newline
      const piece = chunk.subarray(start, Math.min(end, start + Math.max(0, LOG_LINE_BYTES - this.partialBytes)))
      if (newline < 0) {
        if (piece.length) this.partial.push(Buffer.from(piece))
        this.partialBytes += piece.length
        return
      }
      start = newline + 1
      const line = this.take(piece)
      if (!line) continue
      this.logged++
      this.onLine(this.full ? `(more stderr not logged: ${LOG_LINES} lines per agent process are)` : line)
    }
  }

  /** Forgets the line not ended yet (its lines are not wanted now). */
  drop(): void {
    this.partial = []
    this.partialBytes = 0
  }

  /** The stream ended: the last line, when it had no newline. */
  end(): void {
    const line = this.take()
    if (line && !this.full) this.onLine(line)
  }

  /**
   * The line not ended yet (with `last`, its final bytes) decoded, cut to LOG_LINE_LIMIT characters (never inside one,
   * marked) and forgotten. Bytes cut at LOG_LINE_BYTES decode to more characters than that, so a character that byte
   * cut split is never shown.
   */
  private take(last?: Buffer): string {
    const parts = last?.length ? [...this.partial, last] : this.partial
    const text = parts.length ? Buffer.concat(parts).toString('utf8') : ''
    this.drop()
    return headChars(text, LOG_LINE_LIMIT, '…')
  }
}
