// The bound on a remote task id (256 characters, MAX_REMOTE_ID_CHARS), with a stubbed `fetch` (no server): a remote that
// names its task with a longer id fails the start (`A2A_SEND_FAILED`, the id is never polled, answered or cancelled), and a
// journal record holding a longer id fails the restore (`A2A_RESTORE_FAILED`, nothing sent). The code before took an id of
// any length from the remote, and cut a stored one to 256 characters and asked the remote about that cut id (another
// task, or none) without saying so.
import { expect } from 'chai'
import type { RunRecord, SubagentRun } from '@cordis-subagents/subagents-service'
import { GETS, refusal as refused, settle, stubRemote } from './fixtures/long-ids-remote.js'
import { pool, provider, request, within } from './helpers.js'

const BOUND = 5_000
function record(taskId: string): RunRecord {
  const checkpoint = { taskId }
  return { runId: 'run-restored', provider: 'a2a', parentId: 'parent-1', depth: 1, state: 'parked', checkpoint } as unknown as RunRecord
}

/** The rejection of `started` (a run it started after all is disposed). */
const refusal = (started: Promise<SubagentRun>, what: string) => refused(started, what, BOUND)

describe('provider-a2a: the bound on a remote task id (256 characters)', function () {
  this.timeout(20_000)
  let remote: ReturnType<typeof stubRemote> | undefined
  afterEach(() => {
    remote?.restore()
    remote = undefined
  })

  describe('restore of a journal record', () => {
    it('refuses a stored task id of 300 characters with A2A_RESTORE_FAILED naming the bound, and asks the remote nothing', async () => {
      const stored = 'a'.repeat(300)
      remote = stubRemote({ version: '1.0', streaming: false, known: [stored, stored.slice(0, 256)] })
      const a2a = await provider('http://127.0.0.1:9011')
      try {
        const refused = await refusal(a2a.restore!(record(stored), request()), 'restore')
        expect(refused?.code).to.equal('A2A_RESTORE_FAILED')
        expect(refused?.message).to.include('run-restored').and.include('checkpoint.taskId')
        expect(refused?.message).to.include('300 characters').and.include('256')
        expect(refused?.message, 'the id is not quoted').not.to.include(stored.slice(0, 64))
        await settle()
        expect(remote.calls, 'no request for a cut id').to.deep.equal([])
      } finally {
        await a2a.dispose()
      }
    })

    it('with `urls`: refuses it once, before any endpoint is asked (not "no agent host knows the task")', async () => {
      const stored = 'b'.repeat(300)
      remote = stubRemote({ version: '1.0', streaming: false, known: [stored, stored.slice(0, 256)] })
      const a2a = await pool(['http://127.0.0.1:9012', 'http://127.0.0.1:9013'])
      try {
        const refused = await refusal(a2a.restore!(record(stored), request()), 'restore')
        expect(refused?.code).to.equal('A2A_RESTORE_FAILED')
        expect(refused?.message).to.include('300 characters').and.include('256')
        expect(refused?.message).not.to.match(/No agent host knows/)
        await settle()
        expect(remote.calls).to.deep.equal([])
      } finally {
        await a2a.dispose()
      }
    })

    it('keeps the stored task id when the remote answers GetTask with another task: every later call names the stored one', async () => {
      remote = stubRemote({ version: '1.0', streaming: false, known: ['task-stored'], answerAs: 'task-other' })
      const a2a = await provider('http://127.0.0.1:9015')
      try {
        const run = await within(a2a.restore!(record('task-stored'), request()), BOUND, 'restore')
        expect(run.childId).to.equal('task-stored')
        await run.dispose()
        await settle()
        const named = remote.calls.filter((call) => call.params.id !== undefined).map((call) => call.params.id)
        expect(named).to.include('task-stored')
        expect(named).to.not.include('task-other')
      } finally {
        await a2a.dispose()
      }
    })

    it('reads back a stored task id of exactly 256 characters whole', async () => {
      const stored = 'c'.repeat(256)
      remote = stubRemote({ version: '1.0', streaming: false, known: [stored] })
      const a2a = await provider('http://127.0.0.1:9014')
      try {
        const run = await within(a2a.restore!(record(stored), request()), BOUND, 'restore')
        await run.dispose()
        const read = remote.calls.find((call) => GETS.has(call.method))
        expect(read?.params.id).to.equal(stored)
      } finally {
        await a2a.dispose()
      }
    })
  })

  it('with `urls`: a host naming its task with an id of 300 characters fails the start, not failed over (it took the task)', async () => {
    const long = 'f'.repeat(300)
    remote = stubRemote({ version: '1.0', streaming: false, taskId: long, known: [long] })
    const a2a = await pool(['http://127.0.0.1:9017', 'http://127.0.0.1:9018'])
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

  for (const version of ['1.0', '0.3'] as const) {
    for (const streaming of [true, false]) {
      describe(`a remote naming its task (${version}, ${streaming ? 'streamed' : 'polled'})`, () => {
        it('with an id of 300 characters fails the start with A2A_SEND_FAILED naming the bound; the id is never sent back', async () => {
          const long = 'd'.repeat(300)
          remote = stubRemote({ version, streaming, taskId: long, known: [long] })
          const a2a = await provider('http://127.0.0.1:9015')
          try {
            const refused = await refusal(a2a.start(request()), 'start')
            expect(refused?.code).to.equal('A2A_SEND_FAILED')
            expect(refused?.message).to.include('300 characters').and.include('256')
            expect(refused?.message, 'the id is not quoted').not.to.include(long.slice(0, 64))
            await settle()
            // Only the send: no poll, answer or cancel naming the id.
            expect(remote.calls.map((call) => call.method)).to.have.length(1)
            expect(JSON.stringify(remote.calls.slice(1))).not.to.include(long)
          } finally {
            await a2a.dispose()
          }
        })

        it('with an id of exactly 256 characters starts the run (the id is its childId)', async () => {
          const id = 'e'.repeat(256)
          remote = stubRemote({ version, streaming, taskId: id, known: [id] })
          const a2a = await provider('http://127.0.0.1:9016')
          try {
            const run = await within(a2a.start(request()), BOUND, 'start')
            expect(run.childId).to.equal(id)
            await run.dispose()
          } finally {
            await a2a.dispose()
          }
        })
      })
    }
  }
})
