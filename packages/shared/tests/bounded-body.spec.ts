/// <reference types="mocha" />
import { expect } from 'chai'
import { boundedBody } from '@cordis-subagents/shared'

const bytes = (text: string) => new TextEncoder().encode(text)

/** A response whose body gives `chunks` one per read, with the headers given. */
function response(chunks: string[], headers: Record<string, string> = {}, status = 200): Response {
  const queue = [...chunks]
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = queue.shift()
      if (next === undefined) controller.close()
      else controller.enqueue(bytes(next))
    },
  })
  return new Response(body, { status, headers })
}

function bounds(maxBytes: number, extra: Partial<Parameters<typeof boundedBody>[1]> = {}) {
  const seen = { aborted: [] as unknown[], done: 0 }
  return {
    seen,
    bounds: {
      maxBytes, tooLarge: () => new Error(`over ${maxBytes}`), abort: (reason: unknown) => void seen.aborted.push(reason), done: () => void seen.done++, ...extra,
    },
  }
}

describe('shared boundedBody (the one body cap under every bounded fetch)', () => {
  it('passes a body within the cap whole, with status and headers, and is done once it ended', async () => {
    const { seen, bounds: b } = bounds(10)
    const bounded = boundedBody(response(['abc', 'defg'], { 'x-a': '1' }, 201), b)
    expect([bounded.status, bounded.headers.get('x-a')]).to.deep.equal([201, '1'])
    expect(await bounded.text()).to.equal('abcdefg')
    expect(seen.done).to.be.greaterThan(0)
    expect(seen.aborted).to.deep.equal([])
  })

  it('fails a body one byte past the cap with tooLarge() and aborts the request with it', async () => {
    const { seen, bounds: b } = bounds(6)
    const error = await boundedBody(response(['abc', 'defg']), b).text().then(() => undefined, (failure: Error) => failure)
    expect(error?.message).to.equal('over 6')
    expect((seen.aborted[0] as Error).message).to.equal('over 6')
  })

  it('refuses a declared Content-Length above the cap before reading, and ends on an error onChunk returns', async () => {
    const declared = await boundedBody(response(['abc'], { 'content-length': '100' }), bounds(10).bounds).text().catch((error: Error) => error.message)
    expect(declared).to.equal('over 10')
    const { bounds: b } = bounds(100, { onChunk: (chunk: Uint8Array) => chunk.includes(10) ? undefined : new Error('no newline') })
    expect(await boundedBody(response(['line\n', 'more']), b).text().catch((error: Error) => error.message)).to.equal('no newline')
  })

  it('a read that throws fails the body with failure(error); a cancel aborts the request; no body comes back as it is', async () => {
    const broken = new Response(new ReadableStream({ pull: (controller) => controller.error(new Error('reset')) }))
    const { bounds: b } = bounds(10, { failure: (error: unknown) => new Error(`mapped ${(error as Error).message}`) })
    expect(await boundedBody(broken, b).text().catch((error: Error) => error.message)).to.equal('mapped reset')
    const { seen, bounds: c } = bounds(10)
    await boundedBody(response(['abc', 'def']), c).body!.cancel('enough')
    expect(seen.aborted).to.deep.equal(['enough'])
    const empty = new Response(null, { status: 204 })
    const { seen: none, bounds: d } = bounds(10)
    expect(boundedBody(empty, d)).to.equal(empty)
    expect(none.done).to.equal(1)
  })
})
