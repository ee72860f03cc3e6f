// Answers we did not ask to stream, labelled text/event-stream by a hostile remote (127.0.0.1): the card, a
// send, a poll each keep requestTimeout as a deadline for the whole answer and the maxResponseBytes cap.
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { expect } from 'chai'
import { type HostileRemote, type HostileOptions, startHostileRemote } from './fixtures/hostile-remote.js'
import { provider, request, until, within } from './helpers.js'

const BOUND = 20_000

/** Starts an answer typed text/event-stream that sends one space every 100 ms, never ending. */
function trickle(res: ServerResponse): void {
  res.setHeader('content-type', 'text/event-stream')
  res.write('{')
  const timer = setInterval(() => res.write(' '), 100)
  res.once('close', () => clearInterval(timer))
}

describe('provider-a2a: a card answered as text/event-stream', function () {
  this.timeout(60_000)

  it('trickled, it fails the load at cardTimeout (A2A_CARD_INVALID) instead of hanging it', async () => {
    const server = createServer((_req, res) => trickle(res))
    server.listen(0, '127.0.0.1')
    await new Promise<void>((resolve) => server.once('listening', () => resolve()))
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      const loading = provider(url, { cardTimeout: 1_000, requestTimeout: 1_000 }).then(() => undefined, (error) => error)
      const error = await within(loading, BOUND, 'the load')
      expect(error).to.include({ code: 'A2A_CARD_INVALID' })
      expect(error.message).to.match(/Could not read the agent card at .*: no answer within 1000 ms \(cardTimeout\)/)
    } finally {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  })
})

for (const version of ['1.0', '0.3'] as const) {
  describe(`provider-a2a: polled answers of an A2A ${version} remote typed text/event-stream`, function () {
    this.timeout(60_000)
    const remotes: HostileRemote[] = []
    afterEach(async () => {
      await Promise.all(remotes.splice(0).map((remote) => remote.close()))
    })
    async function serve(handler: HostileOptions['handler']) {
      const remote = await startHostileRemote({ version, streaming: false, handler })
      remotes.push(remote)
      return remote
    }
    const working = (t: Parameters<HostileOptions['handler']>[2]) => version === '1.0' ? t.task('t-1', 'working') : t.taskBody('t-1', 'working')

    it('a trickled poll answer is cut at requestTimeout; the run ends error at idleTimeout and cancels its task', async () => {
      const remote = await serve((rpc, res, t) => {
        if (rpc.call === 'send') return t.answer(res, working(t))
        if (rpc.call === 'get') return trickle(res)
        if (rpc.call === 'cancel') return t.answer(res, t.taskBody('t-1', 'canceled'))
      })
      const a2a = await provider(remote.url, { requestTimeout: 500, idleTimeout: 1_500 })
      const run = await within(a2a.start(request()), BOUND, 'start')
      const result = await within(run.result, BOUND, 'the result')
      expect(result.stopReason).to.equal('error')
      expect(result.diagnostic).to.match(/no poll was answered for 1500 ms \(idleTimeout\); the last error: no answer within 500 ms \(requestTimeout\)/)
      await until(() => remote.calls.some((call) => call.call === 'cancel'), 'CancelTask reached the remote')
      await within(run.dispose(), BOUND, 'dispose')
      await within(a2a.dispose(), BOUND, 'provider dispose')
      await until(() => remote.openAnswers() === 0, 'no answer left open')
    })

    it('a poll answer over maxResponseBytes is refused, however it is typed (the task is never read from it)', async () => {
      const remote = await serve((rpc, res, t) => {
        if (rpc.call === 'send') return t.answer(res, working(t))
        if (rpc.call === 'cancel') return t.answer(res, t.taskBody('t-1', 'canceled'))
        if (rpc.call !== 'get') return
        res.setHeader('content-type', 'text/event-stream')
        const artifacts = Array.from({ length: 64 }, (_, i) => t.artifact(`a${i}`, ['x'.repeat(16 * 1024)]))
        res.end(JSON.stringify({ jsonrpc: '2.0', id: rpc.id, result: t.taskBody('t-1', 'completed', artifacts) }))
      })
      const a2a = await provider(remote.url, { maxResponseBytes: 64 * 1024, idleTimeout: 1_500 })
      const run = await within(a2a.start(request()), BOUND, 'start')
      const result = await within(run.result, BOUND, 'the result')
      expect(result.stopReason, result.diagnostic).to.equal('error')
      expect(result.diagnostic).to.match(/the last error: the remote sent more than 65536 bytes \(maxResponseBytes\)/)
      expect(result.output).to.equal('')
      await within(run.dispose(), BOUND, 'dispose')
      await within(a2a.dispose(), BOUND, 'provider dispose')
    })

    it('a trickled send answer is cut at requestTimeout: start rejects A2A_SEND_FAILED', async () => {
      const remote = await serve((rpc, res) => {
        if (rpc.call === 'send') trickle(res)
      })
      const a2a = await provider(remote.url, { requestTimeout: 500 })
      const error = await within(a2a.start(request()).then(() => undefined, (e) => e), BOUND, 'start')
      expect(error).to.include({ code: 'A2A_SEND_FAILED' })
      expect(error.message).to.match(/did not accept the task: no answer within 500 ms \(requestTimeout\)/)
      await within(a2a.dispose(), BOUND, 'provider dispose')
      await until(() => remote.openAnswers() === 0, 'no answer left open')
    })

    it('the parent aborting during a trickled send: start rejects ABORTED once the send is cut, nothing left open', async () => {
      const remote = await serve((rpc, res) => {
        if (rpc.call === 'send') trickle(res)
      })
      const a2a = await provider(remote.url, { requestTimeout: 1_000 })
      const controller = new AbortController()
      const starting = a2a.start(request({ signal: controller.signal })).then(() => undefined, (e) => e)
      await until(() => remote.calls.length === 1, 'the send reached the remote')
      controller.abort()
      const error = await within(starting, BOUND, 'start after the abort')
      expect(error).to.include({ code: 'ABORTED' })
      expect(error.message).to.match(/aborted while the remote agent .* was accepting the task, and its send failed \(no answer within 1000 ms \(requestTimeout\)\); no task id came back to cancel/)
      await within(a2a.dispose(), BOUND, 'provider dispose')
      await until(() => remote.openAnswers() === 0, 'no answer left open')
    })
  })
}
