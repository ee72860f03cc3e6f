// A run that a limit of ours ends (idleTimeout, maxStreamBytes, stuckTimeout) or whose answer the remote does not
// take, while the remote task still runs or waits: CancelTask reaches the remote as the run ends, without waiting
// for dispose, and dispose waits for its answer. A hand-written remote on 127.0.0.1, in both versions' formats.
import { expect } from 'chai'
import { type HostileRemote, type HostileOptions, startHostileRemote } from './fixtures/hostile-remote.js'
import { provider, request, until, within } from './helpers.js'

const BOUND = 20_000

for (const version of ['1.0', '0.3'] as const) {
  describe(`provider-a2a: our own limit ends a run while the A2A ${version} remote task works`, function () {
    this.timeout(60_000)
    const remotes: HostileRemote[] = []
    afterEach(async () => {
      await Promise.all(remotes.splice(0).map((remote) => remote.close()))
    })

    /** A remote whose CancelTask answer comes after `answerAfter` ms (`cancelAnswered` turns true then). */
    async function serve(streaming: boolean, handler: HostileOptions['handler'], answerAfter = 0) {
      const state = { cancelAnswered: false }
      const remote = await startHostileRemote({
        version, streaming,
        handler: (rpc, res, t) => {
          if (rpc.call !== 'cancel') return handler(rpc, res, t)
          setTimeout(() => {
            state.cancelAnswered = true
            t.answer(res, t.taskBody('t-1', 'canceled'))
          }, answerAfter)
        },
      })
      remotes.push(remote)
      return { remote, state }
    }
    const cancels = (remote: HostileRemote) => remote.calls.filter((call) => call.call === 'cancel').length

    async function endsAndCancels(remote: HostileRemote, options: Parameters<typeof provider>[1], diagnostic: RegExp) {
      const a2a = await provider(remote.url, { cancelGrace: 10_000, ...options })
      const run = await within(a2a.start(request()), BOUND, 'start')
      const result = await within(run.result, BOUND, 'the result')
      expect(result.stopReason, result.diagnostic).to.equal('error')
      expect(result.diagnostic).to.match(diagnostic)
      expect(result.diagnostic).to.match(/\(last state working\).*CancelTask was sent for it, so it does not run on\.$/)
      // Before any dispose: the run's end itself tells the remote.
      await until(() => cancels(remote) === 1, 'CancelTask reached the remote before dispose')
      expect(remote.calls.find((call) => call.call === 'cancel')!.params).to.include({ id: 't-1' })
      return { a2a, run }
    }

    it('idleTimeout on a silent stream: the task is cancelled', async () => {
      const { remote, state } = await serve(true, (rpc, res, t) => {
        if (rpc.call === 'stream') t.sse(res)(t.task('t-1', 'working'))
      }, 200)
      const { a2a, run } = await endsAndCancels(remote, { idleTimeout: 1_000 }, /the stream was silent for 1000 ms \(idleTimeout\)/)
      await within(run.dispose(), BOUND, 'dispose')
      expect(state.cancelAnswered, 'dispose waited for the CancelTask answer').to.equal(true)
      expect(cancels(remote)).to.equal(1)
      await within(a2a.dispose(), BOUND, 'provider dispose')
    })

    it('maxStreamBytes on a flooding stream: the task is cancelled', async () => {
      const { remote } = await serve(true, (rpc, res, t) => {
        if (rpc.call !== 'stream') return
        const event = t.sse(res)
        event(t.task('t-1', 'working'))
        const pump = () => {
          while (!res.destroyed) if (!event(t.statusUpdate('t-1', 'working', 'tick'))) return void res.once('drain', pump)
        }
        pump()
      })
      const { a2a, run } = await endsAndCancels(remote, { maxStreamBytes: 256 * 1024 }, /the remote sent more than 262144 bytes \(maxStreamBytes\)/)
      await within(run.dispose(), BOUND, 'dispose')
      await within(a2a.dispose(), BOUND, 'provider dispose')
    })

    it('stuckTimeout on a polled task that never changes: the task is cancelled', async () => {
      const { remote } = await serve(false, (rpc, res, t) => {
        if (rpc.call === 'send') t.answer(res, version === '1.0' ? t.task('t-1', 'working') : t.taskBody('t-1', 'working'))
        if (rpc.call === 'get') t.answer(res, t.taskBody('t-1', 'working'))
      })
      const { a2a, run } = await endsAndCancels(remote, { stuckTimeout: 800 }, /the task showed no progress for 800 ms \(stuckTimeout\)/)
      await within(run.dispose(), BOUND, 'dispose')
      await within(a2a.dispose(), BOUND, 'provider dispose')
    })

    it('an answer the remote does not take ends the run error, and the task left waiting is cancelled', async () => {
      const { remote } = await serve(true, (rpc, res, t) => {
        if (rpc.call !== 'stream') return
        if (rpc.params.message && JSON.stringify(rpc.params.message).includes('the answer')) return t.error(res, -32603, 'cannot take it')
        const event = t.sse(res)
        event(t.task('t-1', 'working'))
        event(t.statusUpdate('t-1', 'input-required', 'Which file?'))
        res.end()
      })
      const a2a = await provider(remote.url, { cancelGrace: 10_000 })
      const run = await within(a2a.start(request()), BOUND, 'start')
      expect((await within(run.result, BOUND, 'the question')).stopReason).to.equal('pending')
      expect(cancels(remote), 'parked: no cancel').to.equal(0)
      const next = await within(run.resume!('the answer'), BOUND, 'resume')
      expect(next.stopReason, next.diagnostic).to.equal('error')
      expect(next.diagnostic).to.match(/did not take the answer to question .*CancelTask was sent for it/)
      await until(() => cancels(remote) === 1, 'CancelTask reached the remote before dispose')
      await within(run.dispose(), BOUND, 'dispose')
      expect(cancels(remote)).to.equal(1)
      await within(a2a.dispose(), BOUND, 'provider dispose')
    })

    it('a run the remote ends (a final state) sends no CancelTask, at the end or at dispose', async () => {
      const { remote } = await serve(true, (rpc, res, t) => {
        if (rpc.call !== 'stream') return
        const event = t.sse(res)
        event(t.task('t-1', 'working'))
        event(t.statusUpdate('t-1', 'failed', 'broke'))
        res.end()
      })
      const a2a = await provider(remote.url)
      const run = await within(a2a.start(request()), BOUND, 'start')
      const result = await within(run.result, BOUND, 'the result')
      expect(result.stopReason).to.equal('error')
      expect(result.diagnostic).to.not.match(/CancelTask/)
      await within(run.dispose(), BOUND, 'dispose')
      await within(a2a.dispose(), BOUND, 'provider dispose')
      expect(cancels(remote)).to.equal(0)
    })
  })
}
