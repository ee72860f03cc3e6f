// A remote that answers "task not found" (JSON-RPC -32001, TaskNotFound) has already lost the task: the run ends
// `error` at once and sends no CancelTask for it, neither as it ends nor at dispose. Every other way a run
// gives up on a task it leaves running still cancels it (one case here; the rest in limit-cancel.slow.spec.ts).
// A hand-written remote on 127.0.0.1 (tests/fixtures/hostile-remote.ts), in both versions' wire formats.
import type { ServerResponse } from 'node:http'
import { expect } from 'chai'
import type { SubagentResult } from '@cordis-subagents/subagents-service'
import { type HostileRemote, type HostileOptions, type Rpc, startHostileRemote, type Tools } from './fixtures/hostile-remote.js'
import { provider, request, until, within } from './helpers.js'

const BOUND = 20_000
const NOT_FOUND = -32001
/** Limits that cannot end a run within BOUND: only the remote's answers can. */
const FAR = { idleTimeout: 600_000, stuckTimeout: 600_000, cancelGrace: 10_000 }

/** A streamed answer that is one JSON-RPC error event: "task not found". */
function sseError(res: ServerResponse, id: Rpc['id'], message: string): void {
  res.setHeader('content-type', 'text/event-stream')
  res.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id, error: { code: NOT_FOUND, message } })}\n\n`)
}

for (const version of ['1.0', '0.3'] as const) {
  describe(`provider-a2a: an A2A ${version} remote answers "task not found"`, function () {
    this.timeout(60_000)
    const remotes: HostileRemote[] = []
    afterEach(async () => {
      await Promise.all(remotes.splice(0).map((remote) => remote.close()))
    })

    /** `handler` answers everything but CancelTask, which is answered `canceled` and counted. */
    async function serve(streaming: boolean, handler: HostileOptions['handler']) {
      const remote = await startHostileRemote({
        version, streaming,
        handler: (rpc, res, t) => rpc.call === 'cancel' ? t.answer(res, t.taskBody('t-1', 'canceled')) : handler(rpc, res, t),
      })
      remotes.push(remote)
      return remote
    }
    const cancels = (remote: HostileRemote) => remote.calls.filter((call) => call.call === 'cancel').length
    /** A send's answer: the task, working. */
    const working = (t: Tools) => version === '1.0' ? t.task('t-1', 'working') : t.taskBody('t-1', 'working')
    const gets = (remote: HostileRemote) => remote.calls.filter((call) => call.call === 'get').length

    /** Starts a run, takes its result, disposes run and provider (dispose waits for any CancelTask's answer). */
    async function runToEnd(remote: HostileRemote, options = {}): Promise<SubagentResult> {
      const a2a = await provider(remote.url, { ...FAR, ...options })
      const run = await within(a2a.start(request()), BOUND, 'start')
      const result = await within(run.result, BOUND, 'the result')
      await within(run.dispose(), BOUND, 'dispose')
      await within(a2a.dispose(), BOUND, 'provider dispose')
      return result
    }

    function lostWithoutCancel(remote: HostileRemote, result: SubagentResult, cause: RegExp) {
      expect(result.stopReason, result.diagnostic).to.equal('error')
      expect(result.diagnostic).to.match(/^Lost the remote task t-1 .*\(last state working\)/)
      expect(result.diagnostic).to.match(cause)
      expect(cancels(remote), 'no CancelTask for a task the remote said it does not know').to.equal(0)
      expect(result.diagnostic, 'no CancelTask is claimed').to.not.match(/CancelTask was sent for it/)
      expect(result.diagnostic).to.match(/no CancelTask was sent/)
    }

    it('a poll answered "task not found": the run ends error and sends no CancelTask', async () => {
      const remote = await serve(false, (rpc, res, t) => {
        if (rpc.call === 'send') t.answer(res, working(t))
        else t.error(res, NOT_FOUND, 'Task not found: t-1')
      })
      const result = await runToEnd(remote)
      lostWithoutCancel(remote, result, /the remote no longer knows the task \(task not found: [^)]*Task not found/)
      expect(gets(remote)).to.equal(1)
    })

    it('a stream that ends mid-task, and tasks/get there answers "task not found": no CancelTask', async () => {
      const remote = await serve(true, (rpc, res, t) => {
        if (rpc.call === 'stream') {
          t.sse(res)(t.task('t-1', 'working'))
          res.end()
        } else {
          t.error(res, NOT_FOUND, 'Task not found: t-1')
        }
      })
      const result = await runToEnd(remote)
      lostWithoutCancel(remote, result, /its stream ended while the task was working, and tasks\/get there failed \([^)]*Task not found/)
      expect(gets(remote)).to.equal(1)
    })

    it('a stream that ends mid-task, followed by polls until one answers "task not found": no CancelTask', async () => {
      const remote = await serve(true, (rpc, res, t) => {
        if (rpc.call === 'stream') {
          t.sse(res)(t.task('t-1', 'working'))
          res.end()
        } else if (gets(remote) === 1) {
          t.answer(res, t.taskBody('t-1', 'working'))
        } else {
          t.error(res, NOT_FOUND, 'Task not found: t-1')
        }
      })
      const result = await runToEnd(remote)
      lostWithoutCancel(remote, result, /no longer knows task t-1 \([^)]*Task not found/)
      expect(gets(remote)).to.equal(2)
    })

    for (const streaming of [true, false]) {
      it(`an answer to its question refused "task not found" (${streaming ? 'streamed' : 'polled'}): no CancelTask`, async () => {
        const answered = (rpc: { params: Record<string, unknown> }) => JSON.stringify(rpc.params.message ?? {}).includes('the answer')
        const remote = await serve(streaming, (rpc, res, t) => {
          // As servers built from either SDK answer a streamed send for a task they lack: an error event.
          if (answered(rpc) && rpc.call === 'stream') return sseError(res, rpc.id, 'Task not found: t-1')
          if (answered(rpc)) return t.error(res, NOT_FOUND, 'Task not found: t-1')
          if (rpc.call === 'stream') {
            const event = t.sse(res)
            event(t.task('t-1', 'working'))
            event(t.statusUpdate('t-1', 'input-required', 'Which file?'))
            res.end()
          } else if (rpc.call === 'send') {
            t.answer(res, working(t))
          } else {
            t.answer(res, t.taskBody('t-1', 'input-required', [], 'Which file?'))
          }
        })
        const a2a = await provider(remote.url, FAR)
        const run = await within(a2a.start(request()), BOUND, 'start')
        expect((await within(run.result, BOUND, 'the question')).stopReason).to.equal('pending')
        const next = await within(run.resume!('the answer'), BOUND, 'resume')
        await within(run.dispose(), BOUND, 'dispose')
        await within(a2a.dispose(), BOUND, 'provider dispose')
        expect(cancels(remote), 'no CancelTask for a task the remote said it does not know').to.equal(0)
        expect(next.stopReason, next.diagnostic).to.equal('error')
        expect(next.diagnostic).to.match(/\(last state input-required\): it did not take the answer to question .*Task not found/)
        expect(next.diagnostic).to.not.match(/CancelTask was sent for it/)
        expect(next.diagnostic).to.match(/no CancelTask was sent/)
      })
    }

    it('polls that fail otherwise (an internal error) until idleTimeout still cancel the task', async () => {
      const remote = await serve(false, (rpc, res, t) => {
        if (rpc.call === 'send') t.answer(res, working(t))
        else t.error(res, -32603, 'internal error')
      })
      const result = await runToEnd(remote, { idleTimeout: 1_000 })
      expect(result.stopReason, result.diagnostic).to.equal('error')
      expect(result.diagnostic).to.match(/no poll was answered for 1000 ms \(idleTimeout\)/)
      expect(result.diagnostic).to.match(/CancelTask was sent for it, so it does not run on\.$/)
      await until(() => cancels(remote) === 1, 'CancelTask reached the remote')
      expect(cancels(remote)).to.equal(1)
    })
  })
}
