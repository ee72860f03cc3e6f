// A cancel's answer is not cut off when the stream reports the task canceled first (a remote built from
// the SDK publishes the canceled status before it answers CancelTask): the run ends at the event, the
// CancelTask request stays open until answered, and dispose waits for it, bounded by cancelGrace.
import type { ServerResponse } from 'node:http'
import { expect } from 'chai'
import { type HostileRemote, startHostileRemote } from './fixtures/hostile-remote.js'
import { provider, request, until, within } from './helpers.js'

const BOUND = 20_000

for (const version of ['1.0', '0.3'] as const) {
  describe(`provider-a2a: the answer to CancelTask after the stream said canceled (A2A ${version})`, function () {
    this.timeout(60_000)
    let remote: HostileRemote | undefined
    afterEach(() => remote?.close())

    /** The stream says working, and canceled as soon as CancelTask arrives; the cancel is answered when `answer` is called. */
    async function cancelAnsweredLate() {
      const held: { res?: ServerResponse; cut: boolean; answer?: () => void } = { cut: false }
      let event: ((result: unknown) => boolean) | undefined
      remote = await startHostileRemote({
        version,
        streaming: true,
        handler: (rpc, res, t) => {
          if (rpc.call === 'stream') {
            event = t.sse(res)
            event(t.task('t-1', 'working'))
            return
          }
          if (rpc.call === 'cancel') {
            held.res = res
            res.once('close', () => { held.cut ||= !res.writableFinished })
            held.answer = () => t.answer(res, t.taskBody('t-1', 'canceled'))
            event!(t.statusUpdate('t-1', 'canceled'))
          }
        },
      })
      return { held }
    }

    it('the run ends aborted at the event; CancelTask stays open (not cut) until the remote answers it, and dispose waits for that', async () => {
      const { held } = await cancelAnsweredLate()
      const a2a = await provider(remote!.url, { cancelGrace: 30_000, requestTimeout: 30_000 })
      const handle = await within(a2a.start(request({ prompt: 'wait' })), BOUND, 'start')
      handle.cancel('the user pressed stop')
      const result = await within(handle.result, BOUND, 'result')
      expect(result.stopReason).to.equal('aborted')
      let disposed = false
      const disposal = handle.dispose().then(() => { disposed = true })
      // The phase is over (the stream's connection is closed by the client); the cancel must still be open.
      await until(() => remote!.openAnswers() === 1, 'only the cancel left open')
      expect(held.cut, 'the client cut the CancelTask request off').to.equal(false)
      expect(disposed, 'dispose waits for the cancel\'s answer').to.equal(false)
      held.answer!()
      await within(disposal, BOUND, 'dispose after the answer')
      expect(held.cut).to.equal(false)
      expect(held.res!.writableFinished).to.equal(true)
      expect(remote!.calls.map((call) => call.call)).to.deep.equal(['stream', 'cancel'])
    })

    it('a remote that never answers CancelTask: dispose ends once cancelGrace has passed, and the request is closed', async () => {
      const { held } = await cancelAnsweredLate()
      const a2a = await provider(remote!.url, { cancelGrace: 300, requestTimeout: 30_000 })
      const handle = await within(a2a.start(request({ prompt: 'wait' })), BOUND, 'start')
      const began = performance.now()
      handle.cancel('the user pressed stop')
      expect((await within(handle.result, BOUND, 'result')).stopReason).to.equal('aborted')
      await within(handle.dispose(), BOUND, 'dispose')
      // A lower bound only: the request was given its cancelGrace before it was closed.
      expect(performance.now() - began).to.be.at.least(300)
      await until(() => held.cut, 'the unanswered CancelTask closed by the client')
      await until(() => remote!.openAnswers() === 0, 'nothing left open')
    })
  })
}
