/**
 * Warnings a child process writes for its parent to repeat. A process we start (an ACP agent, an
 * A2A server) logs to stderr, which its parent keeps only as a tail for diagnostics; a warning the
 * user must see (a failed trace export) would be lost there. Such a warning carries a stable code
 * from `RELAYED_CODES` in its line, and the parent's `ChildWarnings` picks those lines out of the
 * stderr stream and repeats them through its own logger: bounded, without splitting the stream
 * into lines unless a chunk holds a code.
 */

import { peerLine } from '../security/peer-text.js'
import { headChars } from '../vocabulary/text.js'

/** A trace export of the process failed (the telemetry package's `warnOnExportFailure`). */
export const EXPORT_FAILED = 'OTEL_EXPORT_FAILED'

/** The codes whose lines a parent repeats. */
export const RELAYED_CODES: readonly string[] = [EXPORT_FAILED]

/** Characters of a relayed line kept. */
const LINE_LIMIT = 2_000
/** Lines relayed per child process at most (the child already warns once per kind). */
const MAX_LINES = 16
/** Bytes of an unfinished line carried into the next chunk (a code split across chunks is still found). */
const CARRY_BYTES = 4_096

const CODE_BYTES = RELAYED_CODES.map((code) => Buffer.from(code))

export class ChildWarnings {
  private relayed = 0
  private carry: Buffer = Buffer.alloc(0)

  /** `relay` gets each complete stderr line that holds a relayed code (cleaned as `peerLine` does, capped). */
  constructor(private readonly relay: (line: string) => void) {}

  /** Feed every stderr chunk, in order. */
  push(chunk: Buffer): void {
    if (this.relayed >= MAX_LINES) return
    const data = this.carry.length ? Buffer.concat([this.carry, chunk]) : chunk
    const lastNewline = data.lastIndexOf(0x0a)
    const complete = lastNewline < 0 ? undefined : data.subarray(0, lastNewline)
    const rest = lastNewline < 0 ? data : data.subarray(lastNewline + 1)
    this.carry = Buffer.from(rest.subarray(Math.max(0, rest.length - CARRY_BYTES)))
    if (complete && CODE_BYTES.some((code) => complete.includes(code))) this.scan(complete)
  }

  /** The last line, when the stream ended without a newline. */
  end(): void {
    const rest = this.carry
    this.carry = Buffer.alloc(0)
    if (rest.length && this.relayed < MAX_LINES && CODE_BYTES.some((code) => rest.includes(code))) this.scan(rest)
  }

  private scan(lines: Buffer): void {
    let start = 0
    while (start < lines.length && this.relayed < MAX_LINES) {
      const newline = lines.indexOf(0x0a, start)
      const end = newline < 0 ? lines.length : newline
      const line = lines.subarray(start, end)
      if (CODE_BYTES.some((code) => line.includes(code))) {
        this.relayed++
        // Any LINE_LIMIT * 4 bytes decode to more than LINE_LIMIT units, so a character split by this cut is cut off below.
        const text = headChars(peerLine(line.subarray(0, LINE_LIMIT * 4).toString('utf8')).trim(), LINE_LIMIT, '…')
        try {
          this.relay(text)
        } catch {
          // a throwing logger must not break the stream's reading
        }
      }
      start = end + 1
    }
  }
}
