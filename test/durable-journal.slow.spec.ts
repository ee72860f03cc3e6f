// The checkpoints-backed RunJournal against the real store (minato + SQLite in a temp file, or a
// real PostgreSQL server): what each hook writes, in order, and that a failing store never throws.
import { strict as assert } from 'node:assert'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context, Logger } from 'cordis'
import type { Checkpoints } from '@cordis-subagents/checkpoints'
import type { PendingQuestion } from '@cordis-subagents/shared'
import type { SubagentOutcome, SubagentRunInfo } from '@cordis-subagents/subagents-service'
import type { JournalledRun } from '../packages/subagents-service/src/run/journal-port.js'
import { CheckpointJournal } from '../packages/subagents-service/src/durable/journal-checkpoints.js'
import type { CheckpointStore } from '../packages/subagents-service/src/durable/journal-store.js'
import { type Backend, freshPostgres, startStore, type StoreApp } from '../packages/checkpoints/tests/support.js'
import { captureLogs } from './support/logs.js'

// Compile-time: the real store fits the port the service reads it through.
const fits = (store: Checkpoints): CheckpointStore => store
void fits

function runOf(id: string, info: Partial<SubagentRunInfo>, checkpoint: () => unknown = () => undefined, key?: string): JournalledRun {
  return {
    id,
    info: Object.freeze({ runId: id, provider: 'spawn', parentId: 'agent-root', depth: 1, startedAt: Date.now(), ...info }),
    ...key ? { reattachKey: key } : {},
    checkpoint,
  }
}

const outcome = (fields: Partial<SubagentOutcome>): SubagentOutcome => ({
  stopReason: 'completed', status: 'done', output: 'done', work: { steps: 1, toolCalls: 0, delegations: 0 }, durationMs: 1, ...fields,
})

const question: PendingQuestion = { id: 'q-1', kind: 'ask', text: 'Which colour?', path: ['run-9'] }

function journalBehaviour(backend: () => Backend, before: () => Promise<void>) {
  let app: StoreApp
  let journal: CheckpointJournal
  const log = new Logger('durable-test')

  beforeEach(async () => {
    await before()
    app = await startStore(backend())
    journal = new CheckpointJournal(new Context(), () => app.checkpoints, log)
  })
  afterEach(async () => {
    await journal.flush()
    await app.stop()
  })

  it('records start (path below the parent run, child id, label, transcript), park with its question, resume, settle', async () => {
    const parentRun = runOf('run-1', { childId: 'agent-child' })
    const childRun = runOf('run-2', { parentId: 'agent-child', childId: 'agent-grandchild', label: 'look up' },
      () => ({ v: 1, transcript: [{ role: 'user', content: 'hi' }] }))
    journal.started(parentRun)
    journal.started(childRun)
    await journal.flush()
    const started = (await app.checkpoints.load('run-2'))!
    assert.equal(started.state, 'running')
    assert.equal(started.path, 'agent-root/run-1/run-2')
    assert.equal(started.root, 'agent-root')
    assert.equal(started.parent, 'run-1')
    assert.equal(started.agent, 'agent-grandchild')
    assert.equal(started.label, 'look up')
    assert.deepEqual(started.transcript, { v: 1, transcript: [{ role: 'user', content: 'hi' }] })
    assert.equal((await app.checkpoints.load('run-1'))!.parent, '')

    journal.parked(childRun, question)
    await journal.flush()
    const parked = (await app.checkpoints.load('run-2'))!
    assert.equal(parked.state, 'parked')
    const [pending] = await app.checkpoints.questions.pending({ runId: 'run-2' })
    assert.equal(pending.id, 'run-2:q-1')
    assert.equal(pending.path, 'run-2/run-9')
    assert.deepEqual(JSON.parse(pending.question), question)

    journal.resumed(childRun, 'q-1', 'blue')
    await journal.flush()
    assert.equal((await app.checkpoints.load('run-2'))!.state, 'running')
    const answered = (await app.checkpoints.questions.get('run-2:q-1'))!
    assert.equal(answered.state, 'answered')
    assert.equal(answered.answer, 'blue')

    journal.settled(childRun, outcome({ output: 'blue it is', usage: { inputTokens: 5, outputTokens: 7 } }))
    await journal.flush()
    const settled = (await app.checkpoints.load('run-2'))!
    assert.equal(settled.state, 'settled')
    assert.equal(settled.stopReason, 'completed')
    assert.equal(settled.result, 'blue it is')
    assert.deepEqual(settled.usage, { inputTokens: 5, outputTokens: 7 })
    assert.deepEqual(settled.work, { steps: 1, toolCalls: 0, delegations: 0 })
  })

  it('settles closed runs as closed with their checkpoint, and cancels a question left open', async () => {
    let turns = 1
    const run = runOf('run-3', { childId: 'agent-3' }, () => ({ v: 1, turns }))
    journal.started(run)
    journal.parked(run, { ...question, path: [] })
    turns = 2
    journal.settled(run, outcome({ stopReason: 'closed', output: '' }))
    await journal.flush()
    const closed = (await app.checkpoints.load('run-3'))!
    assert.equal(closed.state, 'closed')
    assert.deepEqual(closed.transcript, { v: 1, turns: 2 })
    assert.equal((await app.checkpoints.questions.get('run-3:q-1'))!.state, 'cancelled')
  })

  it('stores the reattach ids a provider checkpoint names (ACP session, A2A task)', async () => {
    journal.started(runOf('run-4', { provider: 'acp', childId: 'sess-1' }, () => ({ sessionId: 'sess-1' })))
    journal.started(runOf('run-5', { provider: 'a2a', childId: 'task-1' }, () => ({ taskId: 'task-1', agentUrl: 'http://127.0.0.1:1/a2a' })))
    await journal.flush()
    assert.equal((await app.checkpoints.load('run-4'))!.sessionId, 'sess-1')
    const a2a = (await app.checkpoints.load('run-5'))!
    assert.equal(a2a.taskId, 'task-1')
    assert.equal(a2a.agentUrl, 'http://127.0.0.1:1/a2a')
  })

  it('claims the task key of a run in the store', async () => {
    journal.started(runOf('run-6', {}, undefined, 'k'.repeat(64)))
    await journal.flush()
    const claim = await app.checkpoints.tasks.get({ parent: 'agent-root', provider: 'spawn', agent: '', prompt: 'k'.repeat(64) })
    assert.equal(claim?.runId, 'run-6')
  })

  it('keeps a run whose checkpoint is too large, without the transcript (logged)', async () => {
    await app.stop()
    app = await startStore(backend(), { maxTranscriptBytes: 64 })
    const capture = captureLogs()
    try {
      journal.started(runOf('run-7', {}, () => ({ text: 'x'.repeat(200) })))
      await journal.flush()
    } finally {
      capture.restore()
    }
    const record = (await app.checkpoints.load('run-7'))!
    assert.equal(record.state, 'running')
    assert.equal(record.transcript, undefined)
    assert.ok(capture.records.some((line) => /run-7: its checkpoint was not stored/.test(line.content)))
  })
}

describe('durable journal on SQLite', function () {
  let dir: string
  let n = 0
  before(() => { dir = mkdtempSync(join(tmpdir(), 'durable-journal-')) })
  after(() => rmSync(dir, { recursive: true, force: true }))
  journalBehaviour(() => ({ kind: 'sqlite', path: join(dir, `j-${n}.db`) }), async () => { n++ })

  it('a store that fails never throws into the run: logged once per kind, later ones at debug level', async () => {
    const broken = {
      save: () => Promise.reject(new Error('disk on fire')),
      questions: { ask: () => Promise.reject(new Error('disk on fire')) },
      limits: { maxTextBytes: 1000 },
    } as unknown as CheckpointStore
    const capture = captureLogs()
    const journal = new CheckpointJournal(new Context(), () => broken, new Logger('durable-test'))
    try {
      for (const id of ['a', 'b', 'c']) {
        const run = runOf(id, {})
        journal.started(run)
        journal.parked(run, question)
      }
      await journal.flush()
    } finally {
      capture.restore()
    }
    const warnings = capture.records.filter((line) => line.type === 'warn' && /disk on fire/.test(line.content))
    assert.equal(warnings.length, 2, warnings.map((line) => line.content).join('\n'))
    assert.ok(warnings.some((line) => /checkpoint start of run a failed/.test(line.content)))
    assert.ok(warnings.some((line) => /checkpoint park of run a failed/.test(line.content)))
  })

  it('writes nothing without a store', async () => {
    let asked = 0
    const journal = new CheckpointJournal(new Context(), () => { asked++; return undefined }, new Logger('durable-test'))
    journal.started(runOf('x', {}))
    journal.settled(runOf('x', {}), outcome({}))
    await journal.flush()
    assert.equal(asked, 2)
  })
})

describe('durable journal on PostgreSQL', function () {
  this.timeout(30_000)
  journalBehaviour(() => ({ kind: 'postgres' }), freshPostgres)
})
