// One long stream event sent in small pieces by a hand-written remote (127.0.0.1): what reaches the SDK's own SSE
// parser, counted where it decodes the body (`new TextDecoderStream()` in both SDKs), is whole lines, so the
// parser's search for newlines (it appends each chunk to the line it holds and searches that from its start) is
// linear in the bytes. Counted, not timed: the code before handed on every piece (work ~ pieces × line).
import { expect } from 'chai'
import { type HostileRemote, startHostileRemote } from './fixtures/hostile-remote.js'
import { provider, request, within } from './helpers.js'

const BOUND = 60_000
const TEXT = 'x'.repeat(2 * 1024 * 1024)
const PIECE = 4 * 1024

/** Runs `work` with every TextDecoderStream's output counted as the SDKs' parsers search it. */
async function parserWork<T>(work: () => Promise<T>): Promise<{ value: T; decoded: number; searched: number }> {
  const Original = globalThis.TextDecoderStream
  let decoded = 0
  let searched = 0
  let held = 0
  class Counted {
    readonly writable: WritableStream<Uint8Array>
    readonly readable: ReadableStream<string>
    constructor(label?: string, options?: ConstructorParameters<typeof TextDecoderStream>[1]) {
      const inner = new Original(label, options)
      this.writable = inner.writable
      this.readable = inner.readable.pipeThrough(new TransformStream<string, string>({
        transform(text, controller) {
          decoded += text.length
          searched += held + text.length
          const newline = text.lastIndexOf('\n')
          held = newline < 0 ? held + text.length : text.length - newline - 1
          controller.enqueue(text)
        },
      }))
    }
  }
  Object.assign(globalThis, { TextDecoderStream: Counted })
  try {
    const value = await work()
    return { value, decoded, searched }
  } finally {
    Object.assign(globalThis, { TextDecoderStream: Original })
  }
}

for (const version of ['1.0', '0.3'] as const) {
  describe(`provider-a2a: a long A2A ${version} stream event sent in small pieces`, function () {
    this.timeout(120_000)
    let remote: HostileRemote | undefined
    afterEach(async () => {
      await remote?.close()
      remote = undefined
    })

    it('reaches the SDK parser as whole lines: the bytes it searches stay about the bytes it got', async () => {
      remote = await startHostileRemote({
        version, streaming: true,
        handler: (rpc, res, t) => {
          if (rpc.call !== 'stream') return
          const event = t.sse(res)
          event(t.task('t-1', 'working'))
          res.socket?.setNoDelay(true)
          const long = `data: ${JSON.stringify({ jsonrpc: '2.0', id: rpc.id, result: t.artifactUpdate('t-1', 'a', TEXT) })}\n\n`
          let at = 0
          const next = () => {
            if (res.destroyed) return
            if (at < long.length) {
              res.write(long.slice(at, at += PIECE))
              return void setImmediate(next)
            }
            event(t.statusUpdate('t-1', 'completed'))
            res.end()
          }
          next()
        },
      })
      const a2a = await provider(remote.url, { maxOutputBytes: 4 * 1024 * 1024, requestTimeout: 10_000 })
      const { value: result, decoded, searched } = await parserWork(async () => {
        const run = await within(a2a.start(request()), BOUND, 'start')
        const ended = await within(run.result, BOUND, 'the result')
        await within(run.dispose(), BOUND, 'dispose')
        return ended
      })
      await within(a2a.dispose(), BOUND, 'provider dispose')
      expect(result.stopReason, result.diagnostic).to.equal('completed')
      expect(result.output).to.equal(TEXT)
      expect(decoded).to.be.above(TEXT.length)
      expect(searched, `characters the parser searched for ${decoded} decoded`).to.be.at.most(2 * decoded)
    })
  })
}
