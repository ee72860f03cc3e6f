// The behavioural spec of ctx.checkpoints, run against each backend (sqlite.spec.ts, postgres.slow.spec.ts).
import { expect } from 'chai'
import { CheckpointError, type RunCheckpoint } from '@cordis-subagents/checkpoints'
import { type Backend, startStore, type StoreApp } from './support.js'

async function rejection(promise: Promise<unknown>): Promise<CheckpointError> {
  try {
    await promise
  } catch (error) {
    return error as CheckpointError
  }
  throw new Error('expected a rejection')
}

const ROOT: RunCheckpoint = { id: 'r1', path: 'r1', parent: '', provider: 'spawn', agent: 'coder', state: 'running' }

export function storeBehaviour(backend: () => Backend, fresh: () => Promise<void>): void {
  let app: StoreApp | undefined
  let second: StoreApp | undefined

  beforeEach(async () => {
    await fresh()
  })

  afterEach(async () => {
    await second?.stop()
    await app?.stop()
    app = second = undefined
  })

  it('saves a run, updates only the fields given, and loads it back', async () => {
    app = await startStore(backend())
    const { checkpoints } = app
    await checkpoints.save(ROOT)
    const transcript = [{ role: 'user', content: 'it\'s "quoted" — ünïcode' }, { role: 'assistant', content: 'ok' }]
    await checkpoints.save({ id: 'r1', transcript, turn: 1, usage: { inputTokens: 10, outputTokens: 5 }, work: { toolCalls: 2 } })
    const record = await checkpoints.load('r1')
    expect(record).to.include({ id: 'r1', path: 'r1', root: 'r1', provider: 'spawn', agent: 'coder', state: 'running', turn: 1, host: 'test-host' })
    expect(record!.transcript).to.deep.equal(transcript)
    expect(record!.usage).to.deep.equal({ inputTokens: 10, outputTokens: 5 })
    expect(record!.work).to.deep.equal({ toolCalls: 2 })
    expect(record!.createdAt).to.be.instanceOf(Date)
    expect(await checkpoints.load('missing')).to.equal(undefined)
  })

  it('keeps reattach ids and lists runs by state, parent, root and background', async () => {
    app = await startStore(backend())
    const { checkpoints } = app
    await checkpoints.save(ROOT)
    await checkpoints.save({ id: 'c1', path: 'r1/c1', parent: 'r1', provider: 'acp', state: 'parked', sessionId: 'sess-9' })
    await checkpoints.save({ id: 'c2', path: 'r1/c2', parent: 'r1', provider: 'a2a', state: 'running', taskId: 't-7', agentUrl: 'http://127.0.0.1:9/a2a', background: true, label: 'research' })
    await checkpoints.save({ id: 'x1', path: 'x1', provider: 'spawn', state: 'settled' })
    expect((await checkpoints.list({ state: 'parked' })).map((r) => r.id)).to.deep.equal(['c1'])
    expect((await checkpoints.list({ state: ['running', 'parked'] })).map((r) => r.id).sort()).to.deep.equal(['c1', 'c2', 'r1'])
    expect((await checkpoints.list({ parent: 'r1' })).map((r) => r.id).sort()).to.deep.equal(['c1', 'c2'])
    expect((await checkpoints.list({ root: 'r1' })).map((r) => r.id).sort()).to.deep.equal(['c1', 'c2', 'r1'])
    const [book] = await checkpoints.list({ background: true })
    expect(book).to.include({ id: 'c2', label: 'research', taskId: 't-7', agentUrl: 'http://127.0.0.1:9/a2a' })
    expect((await checkpoints.load('c1'))!.sessionId).to.equal('sess-9')
    expect(await checkpoints.list({ limit: 2 })).to.have.length(2)
    expect((await rejection(checkpoints.list({ limit: 0 }))).code).to.equal('CHECKPOINT_INVALID')
  })

  it('lists one host\'s runs, and briefly: without the transcript and result columns (a host restart lists its parked runs so)', async () => {
    app = await startStore(backend())
    const { checkpoints } = app
    await checkpoints.save({ ...ROOT, transcript: ['turn 1'], turn: 1, result: 'so far' })
    await checkpoints.save({ id: 'other', path: 'other', provider: 'spawn', state: 'running' })
    await app.ctx.database.set('subagent_run', { id: 'other' }, { host: 'another-host' })
    expect((await checkpoints.list({ host: 'test-host' })).map((r) => r.id)).to.deep.equal(['r1'])
    expect((await checkpoints.list({ host: 'another-host' })).map((r) => r.id)).to.deep.equal(['other'])
    const [full] = await checkpoints.list({ host: 'test-host' })
    expect(full).to.include({ result: 'so far', turn: 1 })
    expect(full.transcript).to.deep.equal(['turn 1'])
    const [brief] = await checkpoints.list({ host: 'test-host', brief: true })
    expect(brief).to.include({ id: 'r1', path: 'r1', state: 'running', turn: 1, host: 'test-host' })
    expect([brief.transcript, brief.result]).to.deep.equal([undefined, undefined])
    // Not read at all: a transcript no write stores hides the run from a full listing, not from a brief one.
    await app.ctx.database.set('subagent_run', { id: 'r1' }, { transcript: '[[[' })
    expect(await checkpoints.list({ host: 'test-host' })).to.deep.equal([])
    expect((await checkpoints.list({ host: 'test-host', brief: true })).map((r) => r.id)).to.deep.equal(['r1'])
  })

  it('refuses oversized and malformed records with stable codes, and keeps the stored run', async () => {
    app = await startStore(backend(), { maxTranscriptBytes: 1000, maxTextBytes: 100 })
    const { checkpoints } = app
    await checkpoints.save({ ...ROOT, transcript: ['small'] })
    const big = await rejection(checkpoints.save({ id: 'r1', transcript: ['x'.repeat(1000)] }))
    expect(big.code).to.equal('CHECKPOINT_TOO_LARGE')
    expect(big.message).to.match(/maxTranscriptBytes/)
    expect((await rejection(checkpoints.save({ id: 'r1', result: 'é'.repeat(51) }))).code).to.equal('CHECKPOINT_TOO_LARGE')
    expect((await rejection(checkpoints.save({ id: 'r1', state: 'lost' as never }))).code).to.equal('CHECKPOINT_INVALID')
    expect((await rejection(checkpoints.save({ id: 'n1', state: 'running' }))).message).to.match(/needs path/)
    expect((await rejection(checkpoints.save({ id: 'y'.repeat(256), path: 'y', provider: 'p', state: 'running' }))).code).to.equal('CHECKPOINT_INVALID')
    expect((await rejection(checkpoints.setState('nope', 'closed'))).code).to.equal('CHECKPOINT_NOT_FOUND')
    expect((await checkpoints.load('r1'))!.transcript).to.deep.equal(['small'])
  })

  it('moves a run between states atomically: of racing transitions one wins, and a settled run never goes back', async () => {
    app = await startStore(backend())
    const { checkpoints } = app
    await checkpoints.save({ ...ROOT, id: 'p1', path: 'r1/p1', state: 'parked' })
    for (let round = 0; round < 25; round++) {
      const from = (['parked', 'interrupted', 'closed'] as const)[round % 3]
      await checkpoints.save({ id: 'p1', state: from })
      const resumable = ['parked', 'interrupted', 'closed'] as const
      const moved = await Promise.all(Array.from({ length: 4 }, () => checkpoints.transition('p1', [...resumable], 'running')))
      expect(moved.filter(Boolean), `round ${round}`).to.have.length(1)
      expect((await checkpoints.load('p1'))!.state).to.equal('running')
    }
    expect(await checkpoints.transition('p1', 'running', { state: 'settled', stopReason: 'completed', result: 'done' })).to.equal(true)
    expect(await checkpoints.transition('p1', ['parked', 'interrupted', 'closed', 'running', 'settled'], 'running')).to.equal(false)
    expect(await checkpoints.transition('missing', 'parked', 'running')).to.equal(false)
    const refused = await rejection(checkpoints.save({ id: 'p1', state: 'running' }))
    expect(refused.code).to.equal('RUN_SETTLED')
    expect(refused.message).to.match(/never starts again/)
    expect((await rejection(checkpoints.setState('p1', 'parked'))).code).to.equal('RUN_SETTLED')
    await checkpoints.save({ id: 'p1', state: 'settled', delivery: 'message' })
    expect(await checkpoints.load('p1')).to.include({ state: 'settled', stopReason: 'completed', result: 'done', delivery: 'message' })
  })

  it('continueRun takes an ended run back to running for a continue, once of racing callers, and nothing else', async () => {
    app = await startStore(backend())
    const { checkpoints } = app
    await checkpoints.save({ ...ROOT, id: 'c1', path: 'r1/c1', state: 'running' })
    expect(await checkpoints.continueRun('c1'), 'a running run is not ended').to.equal(false)
    for (let round = 0; round < 10; round++) {
      await checkpoints.transition('c1', 'running', { state: round % 2 ? 'closed' : 'settled', stopReason: 'completed', result: `turn ${round}` })
      const moved = await Promise.all(Array.from({ length: 4 }, () => checkpoints.continueRun('c1')))
      expect(moved.filter(Boolean), `round ${round}`).to.have.length(1)
      expect((await checkpoints.load('c1'))!.state).to.equal('running')
    }
    expect(await checkpoints.continueRun('missing')).to.equal(false)
  })

  it('claims a task key once: every other claimer gets the winner\'s run id', async () => {
    app = await startStore(backend())
    const input = { parent: 'r1', provider: 'spawn', agent: 'coder', prompt: 'fix the bug' }
    const claims = await Promise.all(Array.from({ length: 8 }, (_, i) => app!.checkpoints.tasks.claim(input, `run-${i}`)))
    const winners = claims.filter((claim) => claim.claimed)
    expect(winners).to.have.length(1)
    for (const claim of claims) expect(claim.runId).to.equal(winners[0].runId)
    const other = await app.checkpoints.tasks.claim({ ...input, prompt: 'fix the bug ' }, 'run-x')
    expect(other.claimed).to.equal(true)
    expect(await app.checkpoints.tasks.release(winners[0].key, 'someone-else')).to.equal(false)
    expect(await app.checkpoints.tasks.release(winners[0].key, winners[0].runId)).to.equal(true)
    expect((await app.checkpoints.tasks.claim(input, 'run-again')).claimed).to.equal(true)
    // Another host on the same database (one at a time: a SQLite file has one store): its `r1` is another process'
    // parent, so the same input is a task of its own, and this host's claim stays this host's.
    await app.stop()
    app = await startStore(backend(), { host: 'other-host' })
    expect(await app.checkpoints.tasks.get(input)).to.equal(undefined)
    expect(await app.checkpoints.tasks.claim(input, 'run-elsewhere')).to.include({ claimed: true, runId: 'run-elsewhere' })
    await app.stop()
    app = await startStore(backend())
    expect((await app.checkpoints.tasks.get(input))!.runId).to.equal('run-again')
  })

  it('sweeps the task keys past the retention, but never the key of a live run (a re-run reattaches by it, however old)', async () => {
    app = await startStore(backend(), { retention: 60_000 })
    const { checkpoints } = app
    const claim = async (id: string, state: RunCheckpoint['state']) => {
      await checkpoints.save({ ...ROOT, id, path: id, state })
      return (await checkpoints.tasks.claim({ parent: 'lead', provider: 'spawn', agent: '', prompt: `task of ${id}` }, id)).key
    }
    const keys = { parked: await claim('p', 'parked'), interrupted: await claim('i', 'interrupted'), running: await claim('r', 'running'),
      settled: await claim('s', 'settled'), closed: await claim('c', 'closed') }
    const gone = await checkpoints.tasks.claim({ parent: 'lead', provider: 'spawn', agent: '', prompt: 'a run never recorded' }, 'nobody')
    const report = await checkpoints.sweep(Date.now() + 120_000)
    expect(report.taskKeys).to.equal(3)
    const held = async (key: string) => (await app!.ctx.database.get('subagent_task_key', { key })).length === 1
    expect(await held(keys.parked), 'a parked run\'s key').to.equal(true)
    expect(await held(keys.interrupted), 'an interrupted run\'s key').to.equal(true)
    expect(await held(keys.running), 'a running run\'s key').to.equal(true)
    for (const key of [keys.settled, keys.closed, gone.key]) expect(await held(key)).to.equal(false)
  })

  it('records a pending question, answers it once, and bounds how many are pending', async () => {
    app = await startStore(backend(), { maxPendingQuestions: 2 })
    const { questions } = app.checkpoints
    const asked = await questions.ask({ runId: 'c1', path: 'r1/c1', question: 'Which branch?' })
    await questions.ask({ runId: 'c2', path: 'r1/c2', question: 'Proceed?' })
    expect((await rejection(questions.ask({ runId: 'c3', path: 'r1/c3', question: 'Too many?' }))).code).to.equal('CHECKPOINT_LIMIT')
    expect((await questions.pending({ runId: 'c1' })).map((q) => q.question)).to.deep.equal(['Which branch?'])
    const [first, late] = await Promise.allSettled([questions.answer(asked.id, 'main'), questions.answer(asked.id, 'dev')])
    expect(first.status).to.equal('fulfilled')
    expect(late.status === 'rejected' && (late.reason as CheckpointError).code).to.equal('QUESTION_NOT_PENDING')
    expect(await questions.get(asked.id)).to.include({ state: 'answered', answer: 'main' })
    expect((await questions.pending()).map((q) => q.runId)).to.deep.equal(['c2'])
    expect((await rejection(questions.cancel('none'))).code).to.equal('CHECKPOINT_NOT_FOUND')
  })

  it('sweeps ended runs past the retention and the oldest ended runs past maxRuns, never live ones', async () => {
    app = await startStore(backend(), { maxRuns: 3, retention: 60_000 })
    const { checkpoints } = app
    await checkpoints.save({ ...ROOT, id: 'live', path: 'live' })
    await checkpoints.save({ ...ROOT, id: 'old', path: 'old', state: 'settled' })
    await checkpoints.save({ ...ROOT, id: 'newer', path: 'newer', state: 'closed' })
    await checkpoints.save({ ...ROOT, id: 'newest', path: 'newest', state: 'parked' })
    expect(await checkpoints.load('old')).to.equal(undefined)
    expect((await checkpoints.list()).map((r) => r.id).sort()).to.deep.equal(['live', 'newer', 'newest'])
    const refused = await rejection(checkpoints.save({ ...ROOT, id: 'more', path: 'more' }).then(() => checkpoints.save({ ...ROOT, id: 'more2', path: 'more2' })))
    expect(refused.code).to.equal('CHECKPOINT_LIMIT')
    const report = await checkpoints.sweep(Date.now() + 120_000)
    expect(report.runs).to.equal(0)
    expect((await checkpoints.list()).map((r) => r.id).sort()).to.deep.equal(['live', 'more', 'newest'])
  })

  it('record writes without reading back: a created run is inserted, any other is updated, with save\'s refusals', async () => {
    app = await startStore(backend())
    const { checkpoints } = app
    await checkpoints.record(ROOT, { created: true })
    await checkpoints.record({ ...ROOT, agent: 'again' }, { created: true })
    await checkpoints.record({ id: 'r1', state: 'settled', result: 'done' })
    expect(await checkpoints.load('r1')).to.include({ agent: 'again', state: 'settled', result: 'done', host: 'test-host' })
    expect((await rejection(checkpoints.record({ id: 'r1', state: 'running' }))).code).to.equal('RUN_SETTLED')
    expect((await rejection(checkpoints.record({ id: 'none', state: 'running' }))).code).to.equal('CHECKPOINT_NOT_FOUND')
    expect((await rejection(checkpoints.record({ ...ROOT, id: 'big', result: 'x'.repeat(300_000) }, { created: true }))).code)
      .to.equal('CHECKPOINT_TOO_LARGE')
  })

  it('group commit: a lazy start and the settle after it are one insert; a lazy record is written within the window, or by drain', async () => {
    app = await startStore(backend())
    const { checkpoints } = app
    const writer = (checkpoints as unknown as { writer?: { run(ops: unknown[]): Promise<number[]> } }).writer
    expect(writer, 'a direct writer on this driver').to.not.equal(undefined)
    const batches: number[] = []
    const run = writer!.run.bind(writer)
    writer!.run = (ops) => {
      batches.push(ops.length)
      return run(ops)
    }
    // Start (lazy) and settle (waited) of one run in one turn: one batch, one statement, the settled row.
    await checkpoints.record({ ...ROOT, id: 'g1', path: 'g1' }, { created: true, lazy: true })
    await checkpoints.record({ id: 'g1', state: 'settled', result: 'done', work: { steps: 1 } })
    expect(batches).to.deep.equal([1])
    expect(await checkpoints.load('g1')).to.include({ state: 'settled', result: 'done', agent: 'coder', parent: '' })
    // A lazy start alone is written within its window (no reader, no drain).
    await checkpoints.record({ ...ROOT, id: 'g2', path: 'g2' }, { created: true, lazy: true })
    const deadline = Date.now() + 5000
    while (batches.length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 2))
    expect(batches).to.deep.equal([1, 1])
    // A read drains first: it sees the lazy record.
    await checkpoints.record({ ...ROOT, id: 'g3', path: 'g3' }, { created: true, lazy: true })
    expect(await checkpoints.load('g3')).to.include({ state: 'running' })
    // A settled run in a batch keeps its state: a later move of it is refused, the batch's other writes land.
    await checkpoints.record({ ...ROOT, id: 'g4', path: 'g4', state: 'settled' }, { created: true, lazy: true })
    const moved = checkpoints.record({ id: 'g4', state: 'running' })
    await checkpoints.record({ ...ROOT, id: 'g5', path: 'g5' }, { created: true })
    expect((await rejection(moved)).code).to.equal('RUN_SETTLED')
    expect(await checkpoints.load('g5')).to.include({ state: 'running' })
    // A created run whose id exists is updated with what was given, in order with the writes after it.
    await checkpoints.record({ ...ROOT, id: 'g5', path: 'g5', agent: 'second' }, { created: true, lazy: true })
    await checkpoints.record({ id: 'g5', state: 'parked' })
    expect(await checkpoints.load('g5')).to.include({ state: 'parked', agent: 'second' })
  })

  it('a lazy start\'s deferred fields are taken when its insert is written, never for a run that settles in the same batch', async () => {
    app = await startStore(backend(), { maxTranscriptBytes: 2000 })
    const { checkpoints } = app
    const taken: string[] = []
    const deferred = (id: string, transcript: unknown) => () => {
      taken.push(id)
      return { transcript, sessionId: `s-${id}` }
    }
    // Settled in the batch of its start: never taken, no transcript stored.
    await checkpoints.record({ ...ROOT, id: 'd1', path: 'd1' }, { created: true, lazy: true, deferred: deferred('d1', { turn: 1 }) })
    await checkpoints.record({ id: 'd1', state: 'settled', result: 'done' })
    expect(taken).to.deep.equal([])
    const settled = await checkpoints.load('d1')
    expect(settled).to.include({ state: 'settled', result: 'done' })
    expect(settled!.transcript).to.equal(undefined)
    // Written alone (a read drains it): taken once, then, with its reattach id.
    const transcript = { messages: ['the task'] }
    await checkpoints.record({ ...ROOT, id: 'd2', path: 'd2' }, { created: true, lazy: true, deferred: deferred('d2', transcript) })
    expect(taken).to.deep.equal([])
    expect(await checkpoints.load('d2')).to.deep.include({ state: 'running', transcript, sessionId: 's-d2' })
    expect(taken).to.deep.equal(['d2'])
    // Closed in the batch (restorable): taken; the close's own transcript wins over the deferred one.
    await checkpoints.record({ ...ROOT, id: 'd3', path: 'd3' }, { created: true, lazy: true, deferred: deferred('d3', { old: true }) })
    await checkpoints.record({ id: 'd3', state: 'closed', transcript: { closed: true } })
    expect(await checkpoints.load('d3')).to.deep.include({ state: 'closed', transcript: { closed: true }, sessionId: 's-d3' })
    // Too large a deferred transcript is left out, the record kept.
    await checkpoints.record({ ...ROOT, id: 'd4', path: 'd4' }, { created: true, lazy: true, deferred: deferred('d4', 'x'.repeat(3000)) })
    const large = await checkpoints.load('d4')
    expect(large).to.include({ state: 'running', sessionId: 's-d4' })
    expect(large!.transcript).to.equal(undefined)
  })

  it('a batch larger than the writer thread\'s shared mailbox is written whole (by message port), before and after smaller ones', async () => {
    app = await startStore(backend(), { maxTranscriptBytes: 4 * 1024 * 1024 })
    const { checkpoints } = app
    // 1.5 MB of JSON, over the 1 MiB mailbox; non-ASCII text so its UTF-8 is longer than its UTF-16.
    const transcript = { messages: ['é'.repeat(400_000), 'z'.repeat(700_000)] }
    await checkpoints.record({ ...ROOT, id: 'b1', path: 'b1' }, { created: true })
    await checkpoints.record({ id: 'b1', state: 'parked', transcript })
    await checkpoints.record({ id: 'b1', state: 'running', turn: 2 })
    expect(await checkpoints.load('b1')).to.deep.include({ state: 'running', turn: 2, transcript })
  })

  it('non-ASCII text written into the mailbox text by text, and a batch near its size (joined and counted), land as given', async () => {
    app = await startStore(backend(), { maxTranscriptBytes: 4 * 1024 * 1024 })
    const { checkpoints } = app
    // 300,000 UTF-16 units at most 3 bytes each fit the 1 MiB mailbox: written text by text, 'é' as two bytes.
    const accented = { messages: ['é'.repeat(300_000), '✓ done — ok'] }
    // 400,000 units might not (× 3 is over 1 MiB): counted exactly (400 KB) and written as one text.
    const near = { messages: ['z'.repeat(400_000)] }
    await checkpoints.record({ ...ROOT, id: 'u1', path: 'u1' }, { created: true })
    await checkpoints.record({ id: 'u1', state: 'parked', transcript: accented, result: 'ünïcödé ✓' })
    await checkpoints.record({ ...ROOT, id: 'u2', path: 'u2' }, { created: true })
    await checkpoints.record({ id: 'u2', state: 'parked', transcript: near })
    expect(await checkpoints.load('u1')).to.deep.include({ state: 'parked', transcript: accented, result: 'ünïcödé ✓' })
    expect(await checkpoints.load('u2')).to.deep.include({ state: 'parked', transcript: near })
  })

  it('batched writes and minato\'s statements interleaved on many runs at once: every write lands, in order per run', async () => {
    app = await startStore(backend())
    const { checkpoints } = app
    const ids = Array.from({ length: 120 }, (_, i) => `m${i}`)
    await Promise.all(ids.map(async (id, i) => {
      await checkpoints.record({ ...ROOT, id, path: id, turn: i }, { created: true, lazy: true })
      // Through minato (a compare-and-set) while other runs' batches are written.
      expect(await checkpoints.transition(id, 'running', 'parked'), id).to.equal(true)
      await checkpoints.record({ id, state: 'running' })
      await checkpoints.record({ id, state: 'settled', result: `r${i}` })
    }))
    const runs = await checkpoints.list({ limit: 1000 })
    const byId = new Map(runs.map((run) => [run.id, run]))
    for (const [i, id] of ids.entries()) expect(byId.get(id), id).to.include({ state: 'settled', result: `r${i}`, turn: i })
  })

  it('keeps maxRuns without counting every new run: past it the oldest ended runs go, 1 % ahead', async () => {
    app = await startStore(backend(), { maxRuns: 200 })
    const { checkpoints } = app
    for (let i = 0; i < 200; i++) await checkpoints.record({ ...ROOT, id: `s${i}`, path: `s${i}`, state: 'settled' }, { created: true })
    await checkpoints.record({ ...ROOT, id: 'new1', path: 'new1' }, { created: true })
    await checkpoints.record({ ...ROOT, id: 'new2', path: 'new2' }, { created: true })
    const ids = (await checkpoints.list()).map((run) => run.id)
    expect(ids).to.have.length(200)
    expect(ids.filter((id) => id.startsWith('s'))).to.have.length(198)
    expect(ids).to.include.members(['new1', 'new2'])
  })

  it('counts the table between sweeps only where other processes add runs (PostgreSQL every 1 % of maxRuns; SQLite never)', async () => {
    app = await startStore(backend(), { maxRuns: 10_000 })
    const count = (app.checkpoints as unknown as { count: { exact(): Promise<number> } }).count
    let counted = 0
    const exact = count.exact.bind(count)
    count.exact = () => {
      counted++
      return exact()
    }
    for (let i = 0; i < 250; i++) await app.checkpoints.record({ ...ROOT, id: `c${i}`, path: `c${i}` }, { created: true })
    expect(counted).to.equal(backend().kind === 'sqlite' ? 0 : 2)
    expect(await app.checkpoints.list({ limit: 1000 })).to.have.length(250)
  })

  it('a full store trims the oldest ended runs without counting the table where it is the only writer (SQLite), and counts before it refuses', async () => {
    app = await startStore(backend(), { maxRuns: 100 })
    const { checkpoints } = app
    const count = (checkpoints as unknown as { count: { exact(): Promise<number> } }).count
    for (let i = 0; i < 100; i++) await checkpoints.record({ ...ROOT, id: `t${i}`, path: `t${i}`, state: 'settled' }, { created: true })
    let counted = 0
    const exact = count.exact.bind(count)
    count.exact = () => {
      counted++
      return exact()
    }
    // Full: each new run past 100 trims one ended run ahead (1 % of 100).
    for (let i = 0; i < 5; i++) await checkpoints.record({ ...ROOT, id: `n${i}`, path: `n${i}` }, { created: true })
    const ids = (await checkpoints.list({ limit: 1000 })).map((run) => run.id)
    expect(ids).to.have.length(100)
    expect(ids).to.include.members(['n0', 'n1', 'n2', 'n3', 'n4'])
    expect(ids).to.not.include.members(['t0', 't1', 't2', 't3', 't4'])
    expect(counted).to.equal(backend().kind === 'sqlite' ? 0 : 5)
    // Nothing ended left to trim: refused, after a count (here the kept count is exact, so still 100).
    for (let i = 5; i < 100; i++) await checkpoints.record({ ...ROOT, id: `n${i}`, path: `n${i}` }, { created: true })
    counted = 0
    const refused = await rejection(checkpoints.record({ ...ROOT, id: 'over', path: 'over' }, { created: true }))
    expect(refused.code).to.equal('CHECKPOINT_LIMIT')
    expect(counted).to.be.at.least(1)
  })

  it('a count due with room to spare is taken in the background: new runs do not wait for it, and the runs added meanwhile are kept in the count', async () => {
    app = await startStore(backend(), { maxRuns: 10_000 })
    const count = (app.checkpoints as unknown as { count: { alone: boolean; exact(): Promise<number>; roomNow(): boolean } }).count
    // As on a store other processes share (SQLite's own is never due).
    count.alone = false
    let release!: () => void
    const held = new Promise<void>((resolve) => { release = resolve })
    let counted = 0
    const exact = count.exact.bind(count)
    count.exact = async () => {
      counted++
      await held
      return exact()
    }
    // 100 new runs make a count due; the next 50 are recorded while it is held.
    for (let i = 0; i < 150; i++) await app.checkpoints.record({ ...ROOT, id: `b${i}`, path: `b${i}` }, { created: true })
    expect(counted).to.equal(1)
    release()
    await app.checkpoints.drain()
    await (app.checkpoints as unknown as { count: { settled(): Promise<void> } }).count.settled()
    // Counted while the 50 were queued: they are added to what the count found, so nothing is due for 50 more.
    let recounted = 0
    count.exact = () => {
      recounted++
      return exact()
    }
    for (let i = 150; i < 199; i++) await app.checkpoints.record({ ...ROOT, id: `b${i}`, path: `b${i}` }, { created: true })
    expect(recounted).to.equal(0)
    expect(await app.checkpoints.list({ limit: 1000 })).to.have.length(199)
  })

  /** What the store holds: the ids of its runs, and every question row. */
  async function stored(): Promise<{ runs: Set<string>; questions: Array<{ id: string; runId: string; state: string }> }> {
    const db = app!.ctx.database
    const runs = new Set((await db.get('subagent_run', {}, { fields: ['id'] })).map((row) => row.id))
    return { runs, questions: await db.get('subagent_question', {}, { fields: ['id', 'runId', 'state'] }) }
  }

  it('questions go with their run: past maxRuns a trimmed run takes its questions, and every question kept has its run', async () => {
    app = await startStore(backend(), { maxRuns: 20 })
    const { checkpoints } = app
    const { questions } = checkpoints
    // The oldest run, parked: live, so never trimmed, and its pending question stays however many runs come after it.
    await checkpoints.record({ ...ROOT, id: 'waiting', path: 'waiting', state: 'parked' }, { created: true })
    await questions.ask({ id: 'waiting:q', runId: 'waiting', path: 'waiting', question: 'Still there?' })
    // As the service journals a child that asks, is answered and settles: 100 runs, one question each.
    for (let i = 0; i < 100; i++) {
      const id = `a${i}`
      await checkpoints.record({ ...ROOT, id, path: id }, { created: true, lazy: true })
      await checkpoints.record({ id, state: 'parked', stopReason: 'pending' })
      await questions.ask({ id: `${id}:q`, runId: id, path: id, question: JSON.stringify({ question: `Which region for ${i}?` }) })
      await checkpoints.record({ id, state: 'running' })
      await questions.answer(`${id}:q`, 'eu-west')
      await checkpoints.record({ id, state: 'settled', result: 'done' }, { logged: true })
    }
    await checkpoints.drain()
    const { runs, questions: kept } = await stored()
    expect(runs.size).to.be.at.most(20)
    expect(runs).to.include('waiting')
    expect(kept.length, 'one question per kept run, none of a trimmed one').to.equal(runs.size)
    for (const question of kept) expect(runs.has(question.runId), `${question.id}: its run is stored`).to.equal(true)
    for (const id of runs) expect(await questions.get(`${id}:q`), `${id} keeps its question`).to.not.equal(undefined)
    expect(await questions.get('waiting:q')).to.include({ state: 'pending' })
  })

  it('the retention sweep takes the questions of the runs it removes (one left pending as the run ended too), never a live run\'s', async () => {
    app = await startStore(backend(), { retention: 60_000 })
    const { checkpoints } = app
    const { questions } = checkpoints
    await checkpoints.save({ ...ROOT, id: 'old', path: 'old' })
    await questions.ask({ id: 'old:q1', runId: 'old', path: 'old', question: 'First?' })
    await questions.answer('old:q1', 'yes')
    // Settled while parked on it: the service cancels it after the settle (or at its next start, after a stop). Nobody answers it now.
    await questions.ask({ id: 'old:q2', runId: 'old', path: 'old', question: 'Second?' })
    await checkpoints.save({ id: 'old', state: 'settled', result: 'done' })
    await checkpoints.save({ ...ROOT, id: 'waiting', path: 'waiting', state: 'parked' })
    await questions.ask({ id: 'waiting:q', runId: 'waiting', path: 'waiting', question: 'Proceed?' })
    // A question of no stored run (the API does not check): pending, it stays (retention sweeps it once settled and old).
    await questions.ask({ id: 'nobody:q', runId: 'nobody', path: 'nobody', question: 'Anyone?' })
    const report = await checkpoints.sweep(Date.now() + 120_000)
    expect(report).to.include({ runs: 1, questions: 2 })
    expect(await questions.get('old:q1')).to.equal(undefined)
    expect(await questions.get('old:q2')).to.equal(undefined)
    expect(await questions.get('waiting:q')).to.include({ state: 'pending' })
    expect(await questions.get('nobody:q')).to.include({ state: 'pending' })
    expect((await questions.pending()).map((question) => question.id).sort()).to.deep.equal(['nobody:q', 'waiting:q'])
  })

  it('remove(id) takes the run\'s questions with it, pending ones too, and no other run\'s', async () => {
    app = await startStore(backend())
    const { checkpoints } = app
    const { questions } = checkpoints
    for (const id of ['a', 'b']) {
      await checkpoints.save({ ...ROOT, id, path: id, state: 'parked' })
      await questions.ask({ id: `${id}:q1`, runId: id, path: id, question: 'First?' })
      await questions.answer(`${id}:q1`, 'yes')
      await questions.ask({ id: `${id}:q2`, runId: id, path: id, question: 'Second?' })
    }
    expect(await checkpoints.remove('a')).to.equal(true)
    expect(await checkpoints.load('a')).to.equal(undefined)
    expect(await questions.get('a:q1')).to.equal(undefined)
    expect(await questions.get('a:q2')).to.equal(undefined)
    expect(await questions.get('b:q1')).to.include({ state: 'answered' })
    expect((await questions.pending()).map((question) => question.id)).to.deep.equal(['b:q2'])
    expect(await checkpoints.remove('a')).to.equal(false)
    const { runs, questions: kept } = await stored()
    expect([...runs]).to.deep.equal(['b'])
    expect(kept.map((question) => question.id).sort()).to.deep.equal(['b:q1', 'b:q2'])
  })

  it('a run that goes live between a trim\'s read and its delete (another host continued it) stays, and keeps its questions', async () => {
    app = await startStore(backend(), { maxRuns: 200 })
    const { checkpoints } = app
    const { questions } = checkpoints
    for (let i = 0; i < 200; i++) await checkpoints.record({ ...ROOT, id: `e${i}`, path: `e${i}`, state: 'settled' }, { created: true })
    for (const id of ['e0', 'e1']) {
      await questions.ask({ id: `${id}:q`, runId: id, path: id, question: 'Which?' })
      await questions.answer(`${id}:q`, 'this one')
    }
    // The trim reads the oldest ended runs (e0, e1); before it deletes them, e0 is taken back to running.
    const db = app.ctx.database as unknown as { get(...args: unknown[]): Promise<Array<{ id: string }>> }
    const get = db.get
    let continued = false
    db.get = async function (this: unknown, ...args: unknown[]) {
      const rows = await get.apply(this, args)
      const options = args[2] as { sort?: unknown } | undefined
      if (!continued && args[0] === 'subagent_run' && options?.sort && rows.some((row) => row.id === 'e0')) {
        continued = true
        await app!.ctx.database.set('subagent_run', { id: 'e0' }, { state: 'running' })
      }
      return rows
    }
    try {
      await checkpoints.record({ ...ROOT, id: 'new', path: 'new' }, { created: true })
    } finally {
      db.get = get
    }
    expect(continued, 'the trim read e0').to.equal(true)
    expect(await checkpoints.load('e0')).to.include({ state: 'running' })
    expect(await questions.get('e0:q')).to.include({ state: 'answered' })
    expect(await checkpoints.load('e1')).to.equal(undefined)
    expect(await questions.get('e1:q')).to.equal(undefined)
    const { runs, questions: kept } = await stored()
    expect(runs.size).to.equal(199)
    for (const question of kept) expect(runs.has(question.runId), `${question.id}: its run is stored`).to.equal(true)
  })

  it('after a restart on the same database: running runs are interrupted, parked ones stay parked', async () => {
    app = await startStore(backend())
    await app.checkpoints.save({ ...ROOT, transcript: ['turn 1'], turn: 1 })
    await app.checkpoints.save({ id: 'p1', path: 'r1/p1', parent: 'r1', provider: 'acp', state: 'parked', sessionId: 's1' })
    await app.checkpoints.save({ id: 'other', path: 'other', provider: 'spawn', state: 'running' })
    await app.ctx.database.set('subagent_run', { id: 'other' }, { host: 'another-host' })
    await app.stop()
    app = await startStore(backend())
    expect(app.checkpoints.interruptedAtStart).to.equal(1)
    expect(await app.checkpoints.load('r1')).to.include({ state: 'interrupted', turn: 1 })
    expect((await app.checkpoints.load('r1'))!.transcript).to.deep.equal(['turn 1'])
    expect(await app.checkpoints.load('p1')).to.include({ state: 'parked', sessionId: 's1' })
    expect(await app.checkpoints.load('other')).to.include({ state: 'running' })
  })
}
