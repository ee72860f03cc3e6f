/**
 * A stream's bytes handed on in whole lines. Both SDKs' SSE parsers append each chunk to the line
 * they hold and search it for a newline from its start, so a long line arriving in small pieces
 * was searched again per piece (quadratic). Here the bytes of an unfinished line are held (the
 * line cap, `MAX_SSE_LINE_BYTES`, bounds them upstream) and passed on, joined, once its newline
 * arrives: each chunk handed on ends at a newline (but the last, at the end of the stream), so the
 * parser searches every byte once.
 */
export function wholeLines(): TransformStream<Uint8Array, Uint8Array> {
  let held: Uint8Array[] = []
  let heldBytes = 0
  return new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      const newline = chunk.lastIndexOf(10)
      if (newline < 0) {
        if (chunk.byteLength) held.push(chunk)
        heldBytes += chunk.byteLength
        return
      }
      const head = chunk.subarray(0, newline + 1)
      controller.enqueue(heldBytes ? joined([...held, head], heldBytes + head.byteLength) : head)
      const tail = chunk.subarray(newline + 1)
      held = tail.byteLength ? [tail] : []
      heldBytes = tail.byteLength
    },
    flush(controller) {
      if (heldBytes) controller.enqueue(joined(held, heldBytes))
      held = []
    },
  })
}

function joined(pieces: Uint8Array[], bytes: number): Uint8Array {
  if (pieces.length === 1) return pieces[0]
  const out = new Uint8Array(bytes)
  let at = 0
  for (const piece of pieces) {
    out.set(piece, at)
    at += piece.byteLength
  }
  return out
}
