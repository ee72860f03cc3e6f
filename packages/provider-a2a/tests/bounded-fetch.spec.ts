// The bounded fetch on a stubbed `fetch` (no server): whether an answer is a stream is what the request
// asked for (Accept), not the answer's content type; and a stream reaches the SDK's SSE parser in whole lines.
import { expect } from 'chai'
import { boundedFetch, type FetchLimits, LimitError } from '../src/bounded-fetch.js'
import { within } from './helpers.js'

const BOUND = 10_000
const SSE = { 'content-type': 'text/event-stream' }
const LIMITS: FetchLimits = { requestTimeout: 300, idleTimeout: 60_000, maxResponseBytes: 64 * 1024, maxStreamBytes: 64 * 1024 * 1024 }
const encoder = new TextEncoder()

/** Answers every request with `answer(signal)`: a Response whose body the test scripts. */
function stubFetch(answer: (signal: AbortSignal) => Response): () => void {
  const original = globalThis.fetch
  globalThis.fetch = (async (_input: unknown, init?: RequestInit) => answer(init!.signal!)) as typeof fetch
  return () => {
    globalThis.fetch = original
  }
}

/** A body sending `piece` every `every` ms until the request is aborted or the reader cancels. */
function trickle(signal: AbortSignal, piece: string, every: number): ReadableStream<Uint8Array> {
  let timer: NodeJS.Timeout | undefined
  return new ReadableStream<Uint8Array>({
    start(controller) {
      timer = setInterval(() => controller.enqueue(encoder.encode(piece)), every)
      signal.addEventListener('abort', () => {
        clearInterval(timer)
        controller.error(signal.reason)
      }, { once: true })
    },
    cancel: () => clearInterval(timer),
  })
}

/** A body of `pieces`, each its own chunk, handed out as fast as they are read. */
function pieces(list: string[]): ReadableStream<Uint8Array> {
  let next = 0
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (next < list.length) controller.enqueue(encoder.encode(list[next++]))
      else controller.close()
    },
  })
}

async function chunksOf(response: Response): Promise<Uint8Array[]> {
  const reader = response.body!.getReader()
  const chunks: Uint8Array[] = []
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return chunks
    chunks.push(value)
  }
}

/**
 * What both SDKs' SSE parsers search for newlines in these chunks: each appends a chunk to the
 * unfinished line it holds and searches the whole of it again (`buffer += chunk; buffer.indexOf('\n')`).
 */
function parserSearch(chunks: Uint8Array[]): number {
  let held = 0
  let searched = 0
  for (const chunk of chunks) {
    searched += held + chunk.byteLength
    const newline = chunk.lastIndexOf(10)
    held = newline < 0 ? held + chunk.byteLength : chunk.byteLength - newline - 1
  }
  return searched
}

const failureOf = (promise: Promise<unknown>) => within(promise.then(() => undefined, (error: unknown) => error), BOUND, 'reading the body')

describe('provider-a2a bounded fetch: stream or plain is what we asked for', function () {
  let restore: (() => void) | undefined
  afterEach(() => {
    restore?.()
    restore = undefined
  })

  it('a plain request (a card, a send, a poll) answered as text/event-stream, trickled, ends at requestTimeout', async () => {
    restore = stubFetch((signal) => new Response(trickle(signal, ' ', 20), { headers: SSE }))
    const response = await boundedFetch(LIMITS, () => ({}))('http://remote.invalid/rpc', { headers: { Accept: 'application/json' } })
    const error = await failureOf(response.text())
    expect(error).to.be.instanceOf(LimitError)
    expect((error as Error).message).to.equal('no answer within 300 ms (requestTimeout)')
  })

  it('with timeoutKey (the card fetch: cardTimeout), a timeout names that key and carries its value', async () => {
    restore = stubFetch((signal) => new Response(trickle(signal, ' ', 20), { headers: { 'content-type': 'application/json' } }))
    const response = await boundedFetch({ ...LIMITS, timeoutKey: 'cardTimeout' }, () => ({}))('http://remote.invalid/card.json')
    const error = await failureOf(response.text())
    expect(error).to.be.instanceOf(LimitError)
    expect((error as Error).message).to.equal('no answer within 300 ms (cardTimeout)')
    expect((error as LimitError).timeout).to.deep.equal({ key: 'cardTimeout', ms: 300 })
  })

  it('a plain request answered as text/event-stream keeps the maxResponseBytes cap', async () => {
    const body = Array.from({ length: 64 }, () => `data: ${'x'.repeat(4_000)}\n\n`)
    restore = stubFetch(() => new Response(pieces(body), { headers: SSE }))
    const response = await boundedFetch({ ...LIMITS, requestTimeout: 60_000 }, () => ({}))('http://remote.invalid/rpc')
    const error = await failureOf(response.text())
    expect(error).to.be.instanceOf(LimitError)
    expect((error as Error).message).to.equal('the remote sent more than 65536 bytes (maxResponseBytes)')
  })

  it('a streamed request answered as JSON gets the plain bounds too', async () => {
    restore = stubFetch((signal) => new Response(trickle(signal, ' ', 20), { headers: { 'content-type': 'application/json' } }))
    const response = await boundedFetch(LIMITS, () => ({}))('http://remote.invalid/rpc', { headers: { Accept: 'text/event-stream' } })
    expect((await failureOf(response.text()) as Error).message).to.equal('no answer within 300 ms (requestTimeout)')
  })

  it('a stream we asked for runs past requestTimeout while it keeps talking (idleTimeout between chunks)', async () => {
    let sent = 0
    restore = stubFetch(() => new Response(new ReadableStream<Uint8Array>({
      async pull(controller) {
        await new Promise((resolve) => setTimeout(resolve, 40))
        if (sent++ < 15) controller.enqueue(encoder.encode(': keep-alive\n'))
        else controller.close()
      },
    }), { headers: SSE }))
    const response = await boundedFetch({ ...LIMITS, requestTimeout: 200, idleTimeout: 5_000 }, () => ({}))('http://remote.invalid/rpc', {
      headers: { Accept: 'text/event-stream' },
    })
    // 15 chunks 40 ms apart: longer than requestTimeout in all, never silent for idleTimeout.
    expect(await within(response.text(), BOUND, 'the stream')).to.equal(': keep-alive\n'.repeat(15))
  })
})

describe('provider-a2a bounded fetch: a stream reaches the SSE parser in whole lines', () => {
  let restore: (() => void) | undefined
  afterEach(() => {
    restore?.()
    restore = undefined
  })

  it('one 2 MiB line sent in 1 KiB pieces is handed on once, whole: the parser searches each byte about once', async () => {
    const piece = 'x'.repeat(1024)
    const sent = ['data: ', ...Array.from({ length: 2048 }, () => piece), '\n\n', 'data: short\n', '\n', ': tail without newline']
    restore = stubFetch(() => new Response(pieces(sent), { headers: SSE }))
    const response = await boundedFetch(LIMITS, () => ({}))('http://remote.invalid/rpc', { headers: { Accept: 'text/event-stream' } })
    const chunks = await within(chunksOf(response), BOUND, 'the stream')
    const bytes = chunks.reduce((sum, chunk) => sum + chunk.byteLength, 0)
    expect(new TextDecoder().decode(Buffer.concat(chunks))).to.equal(sent.join(''))
    // Handed on piece by piece, the parser searched the growing line per piece: about 1,000 times its bytes.
    expect(parserSearch(chunks), `bytes the parser searched for ${bytes} handed on (${chunks.length} chunks)`).to.be.at.most(2 * bytes)
    // Every chunk but the last ends at a newline; the last is what followed the last newline.
    for (const chunk of chunks.slice(0, -1)) expect(chunk.at(-1)).to.equal(10)
    expect(new TextDecoder().decode(chunks.at(-1))).to.equal(': tail without newline')
  })

  it('short lines in one chunk pass at once; a line split over chunks waits for its end', async () => {
    restore = stubFetch(() => new Response(pieces(['data: a\n\ndata: b', 'c\n', '\n']), { headers: SSE }))
    const response = await boundedFetch(LIMITS, () => ({}))('http://remote.invalid/rpc', { headers: { Accept: 'text/event-stream' } })
    const chunks = (await within(chunksOf(response), BOUND, 'the stream')).map((chunk) => new TextDecoder().decode(chunk))
    expect(chunks).to.deep.equal(['data: a\n\n', 'data: bc\n', '\n'])
  })
})
