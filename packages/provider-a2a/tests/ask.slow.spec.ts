// A remote that asks: input-required / auth-required park the run (`pending` with the question),
// `resume(answer)` sends the answer on the same task and follows it to its next result. Against the
// scripted servers built from the SDK's own server classes (A2A 1.0 and 0.3), streamed and polled.
import { expect } from 'chai'
import type { SubagentResult, SubagentRun } from '@cordis-subagents/subagents-service'
import { startScriptedServer, type ScriptedServer } from './fixtures/scripted-server.js'
import { startScriptedServerV03 } from './fixtures/scripted-server-v03.js'
import { pool, provider, request, RUN_MODES, until, within } from './helpers.js'

const BOUND = 10_000

for (const mode of RUN_MODES) {
  describe(`provider-a2a asking (A2A ${mode.version}, ${mode.streaming ? 'streaming' : 'send + polls'}, ${mode.binding})`, function () {
    this.timeout(20_000)
    let server: ScriptedServer
    const runs: SubagentRun[] = []

    beforeEach(async () => {
      server = mode.version === '1.0' ? await startScriptedServer(mode) : await startScriptedServerV03(mode)
    })
    afterEach(async () => {
      await Promise.all(runs.splice(0).map((run) => within(run.dispose(), BOUND, 'dispose')))
      await server.close()
    })

    async function park(prompt: string, options = {}) {
      const remote = await provider(server.url, options)
      const built = request({ prompt })
      const run = await within(remote.start(built), BOUND, 'start')
      runs.push(run)
      const first = await within(run.result, BOUND, 'first result')
      return { run, first, updates: built.updates }
    }

    function resume(run: SubagentRun, answer: string): Promise<SubagentResult> {
      return within(run.resume!(answer), BOUND, 'resume')
    }

    it('input-required → pending with the question; no cancel; resume sends the answer on the same task → completed', async () => {
      const { run, first, updates } = await park('input')
      expect(first.stopReason, first.diagnostic).to.equal('pending')
      expect(first.question).to.deep.include({ kind: 'input-required', text: 'Which file should I read?', path: [] })
      expect(first.question!.id).to.match(/^q-[0-9a-f-]{36}$/)
      expect(first.output).to.equal('')
      // Parked: the remote's execution returned, nothing was cancelled, nothing is being followed.
      await until(() => server.running() === 0, 'the remote execution returned')
      expect(server.cancelRequests).to.deep.equal([])

      const next = await resume(run, 'notes.txt')
      expect(next.stopReason, next.diagnostic).to.equal('completed')
      expect(next.output).to.equal('answered: notes.txt')
      expect(server.sends).to.have.length(2)
      const followUp = server.sends[1].followUp!
      expect(followUp.taskId).to.equal(run.childId)
      expect(followUp.contextId).to.equal(followUp.storedContextId).and.not.equal('')
      // The answer carries the crossing like the prompt did.
      expect(server.sends[1].metadata).to.have.property('cordisSubagents')
      if (mode.streaming) expect(updates).to.deep.include({ kind: 'status', text: 'got the answer: notes.txt' })
      await run.dispose()
      expect(server.cancelRequests).to.deep.equal([])
      expect(server.running()).to.equal(0)
    })

    it('a task that asks again parks again with the new question; the second answer completes it', async () => {
      const { run, first } = await park('input')
      const second = await resume(run, 'again please')
      expect(second.stopReason, second.diagnostic).to.equal('pending')
      expect(second.question).to.deep.include({ kind: 'input-required', text: 'And which line?' })
      expect(second.question!.id).to.not.equal(first.question!.id)
      const last = await resume(run, '42')
      expect(last).to.include({ stopReason: 'completed', output: 'answered: 42' })
      expect(server.sends.map((send) => send.followUp?.taskId)).to.deep.equal([undefined, run.childId, run.childId])
    })

    it('auth-required → pending of kind auth-required; the answer goes the same way', async () => {
      const { run, first } = await park('auth')
      expect(first.stopReason).to.equal('pending')
      expect(first.question).to.deep.include({ kind: 'auth-required', text: 'Sign in first' })
      const next = await resume(run, 'the code is 1234')
      expect(next).to.include({ stopReason: 'completed', output: 'answered: the code is 1234' })
    })

    it('an answer the remote fails on ends the run as an error quoting the remote', async () => {
      const { run } = await park('input')
      const next = await resume(run, 'fail now')
      expect(next.stopReason).to.equal('error')
      expect(next.diagnostic).to.match(/The remote task failed\. It said: "the answer did not help"/)
    })

    it('no provider timer runs while parked: a wait longer than idleTimeout and stuckTimeout, then the answer still completes', async () => {
      const { run, first } = await park('input', { idleTimeout: 150, stuckTimeout: 150, requestTimeout: 3_000 })
      expect(first.stopReason).to.equal('pending')
      await new Promise((resolve) => setTimeout(resolve, 400))
      const next = await resume(run, 'late.txt')
      expect(next.stopReason, next.diagnostic).to.equal('completed')
    })

    it('dispose while parked cancels the waiting remote task; a later resume says the run was disposed', async () => {
      const { run } = await park('input')
      await within(run.dispose(), BOUND, 'dispose')
      expect(server.cancelRequests).to.deep.equal([run.childId])
      const next = await resume(run, 'too late')
      expect(next.stopReason).to.equal('aborted')
      expect(next.diagnostic).to.match(/The run was disposed while it waited for an answer/)
      expect(server.sends).to.have.length(1)
    })

    it('cancel while parked cancels the remote task; resume then ends aborted without sending', async () => {
      const { run } = await park('input')
      run.cancel('the user gave up')
      await until(() => server.cancelRequests.length === 1, 'the cancel reached the remote')
      const next = await resume(run, 'anything')
      expect(next).to.include({ stopReason: 'aborted' })
      expect(next.diagnostic).to.match(/cancelled \(the user gave up\)/)
      expect(server.sends).to.have.length(1)
    })

    it('parkedTimeout: an unanswered question cancels the remote task; resume then ends timeout', async () => {
      const { run } = await park('input', { parkedTimeout: 100 })
      await until(() => server.cancelRequests.length === 1, 'the parked task was cancelled')
      expect(server.cancelRequests).to.deep.equal([run.childId])
      const next = await resume(run, 'too late')
      expect(next.stopReason).to.equal('timeout')
      expect(next.diagnostic).to.match(/waited longer than 100 ms \(parkedTimeout\) for an answer and was cancelled/)
    })

    it('parkedTimeout: the end is reported at once through onIdleEnd, so the service ends the run without waiting for a resume', async () => {
      const ended: SubagentResult[] = []
      const remote = await provider(server.url, { parkedTimeout: 100 })
      const run = await within(remote.start(request({ prompt: 'input', onIdleEnd: (result) => { ended.push(result) } })), BOUND, 'start')
      runs.push(run)
      expect((await within(run.result, BOUND, 'first result')).stopReason).to.equal('pending')
      await until(() => ended.length === 1, 'the expiry reported')
      expect(ended[0].stopReason).to.equal('timeout')
      expect(ended[0].diagnostic).to.match(/waited longer than 100 ms \(parkedTimeout\) for an answer and was cancelled/)
      await until(() => server.cancelRequests.length === 1, 'the parked task was cancelled')
    })

    it('an empty answer leaves the run parked (pending again, saying why); resume on a finished run is an error result', async () => {
      const { run, first } = await park('input')
      const empty = await resume(run, '  ')
      expect(empty).to.include({ stopReason: 'pending' })
      expect(empty.question).to.deep.equal(first.question)
      expect(empty.diagnostic).to.match(/The answer must be a non-empty string/)
      expect((await resume(run, 'ok.txt')).stopReason).to.equal('completed')
      const again = await resume(run, 'more')
      expect(again.stopReason).to.equal('error')
      expect(again.diagnostic).to.match(/The run is not waiting for an answer/)
      expect(server.sends).to.have.length(2)
    })

    it('restore (a restarted host): a fresh provider reattaches by task id; the task asks again with the recorded id; the answer completes it', async () => {
      const { run, first } = await park('input')
      const checkpoint = JSON.parse(JSON.stringify(run.checkpoint!()))
      expect(checkpoint.taskId).to.equal(run.childId)
      const record = { runId: 'run-restored', provider: 'a2a', parentId: 'parent-1', depth: 1, state: 'parked' as const, checkpoint, question: first.question }
      const fresh = await provider(server.url)
      const restored = await within(fresh.restore!(record, request({ prompt: 'not sent' })), BOUND, 'restore')
      runs.push(restored)
      expect(restored.childId).to.equal(run.childId)
      const again = await within(restored.result, BOUND, 'the restored run\'s result')
      expect(again.stopReason).to.equal('pending')
      // The same question, its deadline from the restore on (the restored run's own parkedTimeout).
      expect(again.question).to.deep.equal({ ...first.question, expiresAt: again.question!.expiresAt })
      expect(again.question!.expiresAt).to.be.at.least(first.question!.expiresAt!)
      const done = await resume(restored, 'restored.txt')
      expect(done).to.include({ stopReason: 'completed', output: 'answered: restored.txt' })
      // No second task: the prompt was not sent again, the answer went to the recorded task.
      expect(server.sends.map((send) => send.followUp?.taskId)).to.deep.equal([undefined, run.childId])
    })

    it('restore with several endpoints: the checkpoint names the host that took the task; a fresh pool reattaches on that host and the answer completes the task there', async () => {
      const other = mode.version === '1.0' ? await startScriptedServer(mode) : await startScriptedServerV03(mode)
      try {
        const { run, first } = await park('input')
        const checkpoint = JSON.parse(JSON.stringify(run.checkpoint!()))
        // `park` used a one-URL provider: record it as a pool run would (the host that took it).
        const taken = await pool([other.url, server.url])
        const direct = await within(taken.start(request({ prompt: 'input' })), BOUND, 'start on the pool')
        runs.push(direct)
        expect((await within(direct.result, BOUND, 'pool result')).stopReason).to.equal('pending')
        const owner = (direct.checkpoint!() as { endpoint: string }).endpoint
        expect([new URL(other.url).href, new URL(server.url).href]).to.include(owner)
        const record = { runId: 'run-pooled', provider: 'a2a', parentId: 'parent-1', depth: 1, state: 'parked' as const, checkpoint: { ...checkpoint, endpoint: new URL(server.url).href }, question: first.question }
        const fresh = await pool([other.url, server.url])
        const restored = await within(fresh.restore!(record, request({ prompt: 'not sent' })), BOUND, 'restore')
        runs.push(restored)
        expect(restored.origin).to.equal(new URL(server.url).host)
        const { question } = await within(restored.result, BOUND, 'restored result')
        expect(question).to.deep.equal({ ...first.question, expiresAt: question!.expiresAt }).and.have.property('expiresAt').that.is.a('number')
        expect(await resume(restored, 'pooled.txt')).to.include({ stopReason: 'completed', output: 'answered: pooled.txt' })
        expect(server.sends.filter((send) => send.followUp?.taskId === run.childId)).to.have.length(1)
      } finally {
        await Promise.all(runs.splice(0).map((run) => within(run.dispose(), BOUND, 'dispose')))
        await other.close()
      }
    })

    it('restore of a task still running follows it by polls; its cancel reaches the remote task', async () => {
      const remote = await provider(server.url)
      const original = await within(remote.start(request({ prompt: 'wait' })), BOUND, 'start')
      runs.push(original)
      await until(() => server.running() === 1, 'the remote execution started')
      const record = { runId: 'run-restored', provider: 'a2a', parentId: 'parent-1', depth: 1, state: 'running' as const, checkpoint: original.checkpoint!() }
      const restored = await within((await provider(server.url)).restore!(record, request()), BOUND, 'restore')
      runs.push(restored)
      restored.cancel('the host gave up')
      const result = await within(restored.result, BOUND, 'the restored run\'s result')
      expect(result.stopReason).to.equal('aborted')
      expect(server.cancelRequests).to.deep.equal([original.childId])
      await until(() => server.running() === 0, 'the remote execution ended')
    })

    it('restore of a record without a task, or of a task the remote does not know, rejects A2A_RESTORE_FAILED', async () => {
      const remote = await provider(server.url)
      const base = { runId: 'run-r', provider: 'a2a', parentId: 'parent-1', depth: 1, state: 'parked' as const }
      const none = await remote.restore!({ ...base, checkpoint: {} }, request()).then(() => undefined, (error) => error)
      expect(none).to.include({ code: 'A2A_RESTORE_FAILED' })
      expect(none.message).to.match(/names no remote task/)
      const unknown = await remote.restore!({ ...base, checkpoint: { taskId: 'no-such-task' } }, request()).then(() => undefined, (error) => error)
      expect(unknown).to.include({ code: 'A2A_RESTORE_FAILED' })
      expect(unknown.message).to.match(/Task no-such-task of the remote agent "scripted agent" at http:\/\/127\.0\.0\.1:\d+ could not be read back/)
    })

    it('a remote gone while the run is parked: the answer is not taken → an error naming the question', async () => {
      const { run, first } = await park('input', { requestTimeout: 1_000 })
      await server.kill()
      const next = await resume(run, 'anyone there?')
      expect(next.stopReason).to.equal('error')
      expect(next.diagnostic).to.include(`did not take the answer to question ${first.question!.id}`)
    })
  })
}
