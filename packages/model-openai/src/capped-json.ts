// Reads a JSON body as it streams in and keeps at most `maxItems` elements of every array, so a
// response with 200,000 tool calls is never built as 200,000 objects: the elements past the cap
// are scanned (to find where the array ends, and to count them) but never copied or parsed.
//
// The scan works on UTF-8 bytes: JSON's structural characters are ASCII, and no byte of a
// multi-byte character is ASCII, so a chunk boundary inside a character is harmless. It is one
// pass, linear in the bytes, and a well-formed body stays well-formed after the cut.

/** Deepest nesting accepted (a body of `[[[[…` would otherwise grow the scanner's stack without end). */
export const MAX_JSON_DEPTH = 256

/** The scan yields to the event loop after this many bytes, so even a body that is already buffered never blocks it for long. */
const YIELD_EVERY = 1024 * 1024

const QUOTE = 0x22
const BACKSLASH = 0x5c
const COMMA = 0x2c
const COLON = 0x3a
const OPEN_ARRAY = 0x5b
const CLOSE_ARRAY = 0x5d
const OPEN_OBJECT = 0x7b
const CLOSE_OBJECT = 0x7d
/** Longest object key remembered, in raw bytes (the keys we count by are short: `tool_calls`, `choices`, `content`). */
const MAX_KEY = 64

interface Frame {
  array: boolean
  /** The key this container has in its parent object ('' in an array or at the top). */
  key: string
  /** Elements started so far (arrays). */
  items: number
  /** A value may start next (after `[` or a `,` of an array). */
  expectValue: boolean
  /** A key may start next (after `{` or a `,` of an object). */
  expectKey: boolean
  /** Elements past the cap are being skipped. */
  cutting: boolean
}

export class JsonDepthError extends Error {
  override name = 'JsonDepthError'
}

export class ArrayCappingScanner {
  /** Elements cut, by the key of the array they were in (elements nested in a cut element count too). */
  readonly cut = new Map<string, number>()
  private readonly kept: Uint8Array[] = []
  private readonly stack: Frame[] = []
  /** Frames that are cutting, on the stack: while above zero nothing is copied. */
  private cutting = 0
  private inString = false
  private escaped = false
  /** The raw bytes of the key being read (undefined past `MAX_KEY`: such a key is counted as ''). */
  private keyBytes: number[] | undefined
  private expectingKeyEnd = false
  private lastKey = ''

  constructor(private readonly maxItems: number) {}

  push(chunk: Uint8Array): void {
    let copyFrom = 0
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i]!
      if (this.inString) {
        if (this.escaped) this.escaped = false
        else if (byte === BACKSLASH) this.escaped = true
        else if (byte === QUOTE) {
          this.endString()
          continue
        }
        if (this.keyBytes) {
          if (this.keyBytes.length < MAX_KEY) this.keyBytes.push(byte)
          else this.keyBytes = undefined
        }
        continue
      }
      if (byte <= 0x20) continue
      const top = this.stack.at(-1)
      if (byte === COMMA && top) {
        if (top.array) {
          // The comma before the first element past the cap starts the cut; the closing `]` ends it.
          if (!top.cutting && top.items >= this.maxItems) {
            if (this.cutting === 0 && i > copyFrom) this.kept.push(chunk.slice(copyFrom, i))
            top.cutting = true
            this.cutting++
          }
          top.expectValue = true
        } else {
          top.expectKey = true
        }
        continue
      }
      if (byte === COLON) continue
      if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) {
        const frame = this.stack.pop()
        if (frame?.cutting) {
          this.cutting--
          if (this.cutting === 0) copyFrom = i
        }
        if (frame?.array) this.count(frame)
        continue
      }
      // A value (or a key) starts here.
      if (top?.array && top.expectValue) {
        top.items++
        top.expectValue = false
      }
      if (byte === QUOTE) {
        this.inString = true
        this.expectingKeyEnd = !!top && !top.array && top.expectKey
        this.keyBytes = this.expectingKeyEnd ? [] : undefined
        if (top && !top.array) top.expectKey = false
        continue
      }
      if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) {
        if (this.stack.length >= MAX_JSON_DEPTH) throw new JsonDepthError(`the JSON nests deeper than ${MAX_JSON_DEPTH} levels`)
        const key = top && !top.array ? this.lastKey : ''
        this.stack.push({ array: byte === OPEN_ARRAY, key, items: 0, expectValue: true, expectKey: byte === OPEN_OBJECT, cutting: false })
      }
      // Numbers, true, false, null: their bytes need no state.
    }
    // A whole chunk is kept as it is; a piece is copied, so a mostly cut chunk is not held by its tail.
    if (this.cutting === 0 && copyFrom < chunk.length) this.kept.push(copyFrom === 0 ? chunk : chunk.slice(copyFrom))
  }

  /** The kept text. */
  text(): string {
    return new TextDecoder().decode(Buffer.concat(this.kept))
  }

  private endString(): void {
    this.inString = false
    if (this.expectingKeyEnd) this.lastKey = this.keyBytes ? decodeKey(this.keyBytes) : ''
    this.expectingKeyEnd = false
    this.keyBytes = undefined
  }

  /** Counts an array's elements that were not kept: past the cap, or all of them inside a cut element. */
  private count(frame: Frame): void {
    const dropped = this.cutting > 0 ? frame.items : Math.max(0, frame.items - this.maxItems)
    if (dropped) this.cut.set(frame.key, (this.cut.get(frame.key) ?? 0) + dropped)
  }
}

/** A key's raw bytes (escapes included) → its text; '' when they are not a valid JSON string. */
function decodeKey(bytes: number[]): string {
  try {
    return JSON.parse(`"${Buffer.from(bytes).toString('utf8')}"`) as string
  } catch {
    return ''
  }
}

/**
 * Reads `body` through an `ArrayCappingScanner` and parses what was kept. Throws `SyntaxError`
 * for a body that is not JSON and `JsonDepthError` for one nested past `MAX_JSON_DEPTH`.
 */
export async function readCappedJson(
  body: ReadableStream<Uint8Array> | null, maxItems: number,
): Promise<{ value: unknown; cut: ReadonlyMap<string, number> }> {
  const scanner = new ArrayCappingScanner(maxItems)
  if (body) {
    const reader = body.getReader()
    try {
      let sinceYield = 0
      while (true) {
        const { done, value } = await reader.read()
        if (done) break
        scanner.push(value)
        sinceYield += value.byteLength
        if (sinceYield >= YIELD_EVERY) {
          sinceYield = 0
          await new Promise<void>((resolve) => setImmediate(resolve))
        }
      }
    } catch (error) {
      reader.cancel(error).catch(() => {})
      throw error
    }
  }
  return { value: JSON.parse(scanner.text()), cut: scanner.cut }
}
