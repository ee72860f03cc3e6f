// The bound on a remote context id (256 characters, the rule of the task id: src/remote-ids.ts), with a stubbed `fetch`
// (no server). A remote naming its task's context with a longer id fails the start (`A2A_SEND_FAILED`, nothing sent after
// the send: the context is never kept, stored or sent back); a context first named later in the run ends it `error`; a
// journal record holding a longer context id fails the restore (`A2A_RESTORE_FAILED`, nothing sent), and so does a
// `GetTask` answer naming one. The code before took a context id of any length (up to `maxResponseBytes`, 4 MiB by
// default), kept it in the run's checkpoint and sent it back on every answer and follow-up.
import { expect } from 'chai'
import type { RunRecord, SubagentRun } from '@cordis-subagents/subagents-service'
import { GETS, refusal as refused, SENDS, settle, STREAMS, stubRemote } from './fixtures/long-ids-remote.js'
import { pool, provider, request, within } from './helpers.js'

const BOUND = 5_000

function record(checkpoint: { taskId: string; contextId?: string }): RunRecord {
  return { runId: 'run-restored', provider: 'a2a', parentId: 'parent-1', depth: 1, state: 'parked', checkpoint } as unknown as RunRecord
}

/** The rejection of `started` (a run it started after all is disposed). */
const refusal = (started: Promise<SubagentRun>, what: string) => refused(started, what, BOUND)

describe('provider-a2a: the bound on a remote context id (256 characters)', function () {
  this.timeout(20_000)
  let remote: ReturnType<typeof stubRemote> | undefined
  afterEach(() => {
    remote?.restore()
    remote = undefined
  })

  for (const version of ['1.0', '0.3'] as const) {
    for (const streaming of [true, false]) {
      describe(`a remote naming its task's context (${version}, ${streaming ? 'streamed' : 'polled'})`, () => {
        it('with an id of 300 characters fails the start with A2A_SEND_FAILED naming the bound; nothing further is sent', async () => {
          const long = 'x'.repeat(300)
          remote = stubRemote({ version, streaming, contextId: long, known: ['task-1'] })
          const a2a = await provider('http://127.0.0.1:9021')
          try {
            const refused = await refusal(a2a.start(request()), 'start')
            expect(refused?.code).to.equal('A2A_SEND_FAILED')
            expect(refused?.message).to.include('context').and.include('300 characters').and.include('256')
            expect(refused?.message, 'the task is named, so it can be found there').to.include('task-1')
            expect(refused?.message, 'the context id is not quoted').not.to.include(long.slice(0, 64))
            await settle()
            // Only the send: no poll, answer or cancel.
            expect(remote.calls.map((call) => call.method)).to.have.length(1)
          } finally {
            await a2a.dispose()
          }
        })

        it('with an id of exactly 256 characters keeps it whole: in the checkpoint, and sent back on a follow-up', async () => {
          const context = 'y'.repeat(256)
          remote = stubRemote({ version, streaming, contextId: context, state: 'completed' })
          const a2a = await provider('http://127.0.0.1:9022')
          try {
            const run = await within(a2a.start(request()), BOUND, 'start')
            expect((await within(run.result, BOUND, 'result')).stopReason).to.equal('completed')
            expect(run.checkpoint?.()).to.deep.include({ taskId: 'task-1', contextId: context })
            const next = await within(run.continueWith!('and then?', request()), BOUND, 'continue')
            await next.dispose()
            await run.dispose()
            const sends = remote.calls.filter((call) => STREAMS.has(call.method) || SENDS.has(call.method))
            expect(sends).to.have.length(2)
            expect(sends[1]!.params.message?.contextId, 'the follow-up names the whole context').to.equal(context)
          } finally {
            await a2a.dispose()
          }
        })
      })
    }
  }

  for (const version of ['1.0', '0.3'] as const) {
    it(`a context of 300 characters first named by a poll (${version}) ends the run error naming the bound, never sent back`, async () => {
      const long = 'z'.repeat(300)
      remote = stubRemote({ version, streaming: false, contextId: '', readContextId: long, known: ['task-1'] })
      const a2a = await provider('http://127.0.0.1:9023')
      try {
        const run = await within(a2a.start(request()), BOUND, 'start')
        const result = await within(run.result, BOUND, 'result')
        await run.dispose()
        await settle()
        expect(result.stopReason).to.equal('error')
        expect(result.diagnostic).to.include('context').and.include('300 characters').and.include('256')
        expect(result.diagnostic).not.to.include(long.slice(0, 64))
        expect(run.checkpoint?.()).to.include({ taskId: 'task-1' }).and.not.to.have.property('contextId')
        // The run ended on our side: its task is cancelled (by its id), and no request carries the context.
        expect(remote.calls.map((call) => call.method).at(-1)).to.match(/^(CancelTask|tasks\/cancel)$/)
        expect(JSON.stringify(remote.calls)).not.to.include(long)
      } finally {
        await a2a.dispose()
      }
    })
  }

  it('with `urls`: a host naming a context of 300 characters fails the start, not failed over (it took the task)', async () => {
    remote = stubRemote({ version: '1.0', streaming: false, contextId: 'x'.repeat(300), known: ['task-1'] })
    const a2a = await pool(['http://127.0.0.1:9024', 'http://127.0.0.1:9025'])
    try {
      const refused = await refusal(a2a.start(request()), 'start')
      expect(refused?.code).to.equal('A2A_SEND_FAILED')
      expect(refused?.message).to.include('300 characters').and.include('256')
      await settle()
      expect(remote.calls.map((call) => call.method)).to.deep.equal(['SendMessage'])
    } finally {
      await a2a.dispose()
    }
  })

  describe('restore of a journal record', () => {
    for (const urls of [false, true]) {
      it(`refuses a stored context id of 300 characters with A2A_RESTORE_FAILED naming the bound; nothing sent${urls ? ' (`urls`)' : ''}`,
        async () => {
          const stored = 'w'.repeat(300)
          remote = stubRemote({ version: '1.0', streaming: false, known: ['task-stored'], contextId: stored })
          const a2a = urls ? await pool(['http://127.0.0.1:9026', 'http://127.0.0.1:9027']) : await provider('http://127.0.0.1:9026')
          try {
            const refused = await refusal(a2a.restore!(record({ taskId: 'task-stored', contextId: stored }), request()), 'restore')
            expect(refused?.code).to.equal('A2A_RESTORE_FAILED')
            expect(refused?.message).to.include('run-restored').and.include('checkpoint.contextId')
            expect(refused?.message).to.include('300 characters').and.include('256')
            expect(refused?.message, 'the id is not quoted').not.to.include(stored.slice(0, 64))
            expect(refused?.message).not.to.match(/No agent host knows/)
            await settle()
            expect(remote.calls, 'nothing sent').to.deep.equal([])
          } finally {
            await a2a.dispose()
          }
        })
    }

    it('refuses a GetTask answer naming a context of 300 characters with A2A_RESTORE_FAILED; nothing sent after the read', async () => {
      const long = 'v'.repeat(300)
      remote = stubRemote({ version: '1.0', streaming: false, known: ['task-stored'], contextId: long })
      const a2a = await provider('http://127.0.0.1:9028')
      try {
        const refused = await refusal(a2a.restore!(record({ taskId: 'task-stored' }), request()), 'restore')
        expect(refused?.code).to.equal('A2A_RESTORE_FAILED')
        expect(refused?.message).to.include('task-stored').and.include('300 characters').and.include('256')
        expect(refused?.message).not.to.include(long.slice(0, 64))
        await settle()
        expect(remote.calls.map((call) => GETS.has(call.method))).to.deep.equal([true])
      } finally {
        await a2a.dispose()
      }
    })

    it('restores a record whose context id has exactly 256 characters, keeping it whole', async () => {
      const stored = 'u'.repeat(256)
      remote = stubRemote({ version: '1.0', streaming: false, known: ['task-stored'], contextId: stored })
      const a2a = await provider('http://127.0.0.1:9029')
      try {
        const run = await within(a2a.restore!(record({ taskId: 'task-stored', contextId: stored }), request()), BOUND, 'restore')
        expect(run.checkpoint?.()).to.deep.include({ taskId: 'task-stored', contextId: stored })
        await run.dispose()
      } finally {
        await a2a.dispose()
      }
    })
  })
})
