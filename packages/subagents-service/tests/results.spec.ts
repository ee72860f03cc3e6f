// ctx.subagents.result(runId) and the book behind it: every final outcome kept by run id, bounded
// by count and bytes, read again without touching the run; stable codes for what it cannot give.
import { expect } from 'chai'
import fc from 'fast-check'
import { MAX_KEPT_RESULTS, ResultBook, type SubagentOutcome, type SubagentRunInfo } from '@cordis-subagents/subagents-service'
import { FakeProvider, type Harness, providerPlugin, rejection, request, setup } from './helpers.js'

const info = (runId: string): SubagentRunInfo => ({ runId, provider: 'fake', parentId: 'agent-1', depth: 1, startedAt: 0 })
const outcome = (output: string): SubagentOutcome => ({ stopReason: 'completed', status: 'done', output, work: { steps: 1, toolCalls: 0, delegations: 0 }, durationMs: 1 })

describe('ctx.subagents.result(runId): results kept by run id', () => {
  let h: Harness
  let fake: FakeProvider

  beforeEach(async () => {
    h = await setup()
    fake = new FakeProvider('fake')
    fake.parkable = true
    h.ctx.plugin(providerPlugin(fake))
    await h.ctx.lifecycle.flush()
  })
  afterEach(async () => { await h.stop() })

  it('keeps each final outcome; reading it again calls nothing of the provider, even after the run was disposed', async () => {
    const run = await h.ctx.subagents.delegate('fake', request(h.root, { label: 'sum' }))
    fake.last.complete('the answer', { usage: { inputTokens: 3, outputTokens: 4 }, diagnostic: 'fine' })
    await run.result
    await run.dispose()
    const calls = fake.calls.length
    const kept = await h.ctx.subagents.result(run.id)
    expect(kept).to.deep.include({
      runId: run.id, provider: 'fake', parentId: h.root.id, label: 'sum', stopReason: 'completed', status: 'done', output: 'the answer', diagnostic: 'fine',
      usage: { inputTokens: 3, outputTokens: 4 }, source: 'memory', truncated: false,
    })
    expect(Object.isFrozen(kept)).to.equal(true)
    expect(await h.ctx.subagents.result(run.id)).to.equal(kept)
    expect(fake.calls.length).to.equal(calls)
    expect(fake.last.disposeCalls).to.equal(1)
  })

  it('keeps the status beside the stop reason, and the limit of an incomplete run', async () => {
    const run = await h.ctx.subagents.delegate('fake', request(h.root))
    fake.last.finish({ stopReason: 'budget', output: 'partial', budget: { budget: 'toolCalls', limit: 2, spent: 2 } })
    expect(await run.result).to.deep.include({ status: 'incomplete', limit: 'toolCalls' })
    expect(await h.ctx.subagents.result(run.id)).to.deep.include({ stopReason: 'budget', status: 'incomplete', limit: 'toolCalls', output: 'partial' })
    await run.dispose()
  })

  it('a live run is NOT_ENDED (running, parked, interrupted: each named, with what to do); unknown ids are NOT_FOUND', async () => {
    const run = await h.ctx.subagents.delegate('fake', request(h.root))
    const running = await rejection(h.ctx.subagents.result(run.id))
    expect(running).to.include({ code: 'NOT_ENDED' })
    expect(running.message).to.match(/is running.*wait for it/)
    fake.last.ask('Which file?')
    await run.result
    expect((await rejection(h.ctx.subagents.result(run.id))).message).to.match(/is parked.*resume/)
    const next = run.resume('a.txt')
    fake.last.run.interrupt!()
    await next
    expect((await rejection(h.ctx.subagents.result(run.id))).message).to.match(/is interrupted.*wake or close/)
    const closed = h.ctx.subagents.close(run.id)
    expect((await closed).stopReason).to.equal('closed')
    expect(await h.ctx.subagents.result(run.id)).to.include({ stopReason: 'closed' })
    expect(fake.last.answers).to.deep.equal(['a.txt'])
    await run.dispose()

    expect(await rejection(h.ctx.subagents.result('run-none'))).to.include({ code: 'NOT_FOUND' })
    for (const bad of ['', 42, 'x'.repeat(256)]) {
      expect(await rejection(h.ctx.subagents.result(bad as string))).to.include({ code: 'INVALID_REQUEST' })
    }
  })

  it(`keeps the last ${MAX_KEPT_RESULTS} results; an older one reads RESULT_EXPIRED, saying what is kept`, async () => {
    fake.onRun = (run) => run.complete(`answer ${run.request.runId}`)
    const ids: string[] = []
    for (let i = 0; i <= MAX_KEPT_RESULTS; i++) {
      // A root of its own each: one tree may start only maxChildren (16) delegations.
      const run = await h.ctx.subagents.delegate('fake', request(h.ctx.agents.create({ label: 'root' })))
      await run.result
      await run.dispose()
      ids.push(run.id)
    }
    expect(h.ctx.subagents.results.size.results).to.equal(MAX_KEPT_RESULTS)
    const expired = await rejection(h.ctx.subagents.result(ids[0]))
    expect(expired).to.include({ code: 'RESULT_EXPIRED' })
    expect(expired.message).to.match(/last 256 results \(16 MiB of output\); load @cordis-subagents\/checkpoints/)
    expect((await h.ctx.subagents.result(ids[1])).output).to.equal(`answer ${ids[1]}`)
    expect((await h.ctx.subagents.result(ids.at(-1)!)).output).to.equal(`answer ${ids.at(-1)}`)
  })
})

describe('ResultBook: bounded by count and bytes', () => {
  it('forgets the oldest past its byte bound, and keeps one output longer than it cut (never inside a character)', () => {
    const book = new ResultBook({ maxResults: 10, maxBytes: 12 })
    book.record(info('a'), outcome('12345678'))
    book.record(info('b'), outcome('abcdefgh'))
    expect(book.get('a')).to.equal(undefined)
    expect(book.wasForgotten('a')).to.equal(true)
    expect(book.size).to.deep.equal({ results: 1, bytes: 8 })
    book.record(info('c'), outcome('😀😀😀😀'))
    expect(book.get('b')).to.equal(undefined)
    expect(book.get('c')).to.include({ output: '😀😀😀', truncated: true })
    expect(book.size).to.deep.equal({ results: 1, bytes: 12 })
    book.record(info('d'), outcome('😀😀😀😀' + 'é'))
    expect(book.get('d')!.output).to.equal('😀😀😀')
  })

  it('a second outcome of one run replaces the first; a book of size 0 keeps nothing', () => {
    const book = new ResultBook({ maxResults: 2, maxBytes: 100 })
    book.record(info('a'), outcome('first'))
    book.record(info('a'), outcome('second'))
    expect(book.size).to.deep.equal({ results: 1, bytes: 6 })
    expect(book.get('a')!.output).to.equal('second')
    book.record(info('b'), { ...outcome('out'), stopReason: 'error', diagnostic: 'why' })
    expect(book.size, 'a diagnostic counts too').to.deep.equal({ results: 2, bytes: 12 })
    const none = new ResultBook({ maxResults: 0, maxBytes: 100 })
    none.record(info('a'), outcome('x'))
    expect(none.get('a')).to.equal(undefined)
  })

  it('an output near the byte bound with a diagnostic is cut to leave it room: the new outcome is kept, never forgotten at once', () => {
    const book = new ResultBook({ maxResults: 10, maxBytes: 12 })
    book.record(info('a'), outcome('1234'))
    book.record(info('b'), { ...outcome('abcdefghijkl'), stopReason: 'error', diagnostic: 'why' })
    expect(book.get('b')).to.include({ output: 'abcdefghi', truncated: true, diagnostic: 'why' })
    expect(book.get('a'), 'the older one makes room').to.equal(undefined)
    expect(book.size).to.deep.equal({ results: 1, bytes: 12 })
  })

  it('property: under any sequence of records (new runs, runs recorded again, outputs of any size) it keeps what a plain model of the rule keeps', () => {
    // The rule written the obvious way: an ordered list, the oldest forgotten first while over either bound (never the newest).
    class Model {
      kept: Array<{ runId: string; output: string; bytes: number }> = []
      forgotten: string[] = []
      constructor(readonly maxResults: number, readonly maxBytes: number) {}
      record(runId: string, output: string) {
        const bytes = Buffer.byteLength(output, 'utf8')
        this.kept = this.kept.filter((entry) => entry.runId !== runId)
        this.forgotten = this.forgotten.filter((id) => id !== runId)
        this.kept.push({ runId, output, bytes })
        const total = () => this.kept.reduce((sum, entry) => sum + entry.bytes, 0)
        while (this.kept.length > this.maxResults || (total() > this.maxBytes && this.kept.length > 1)) {
          this.forgotten.push(this.kept.shift()!.runId)
          if (this.forgotten.length > 4 * this.maxResults) this.forgotten.shift()
        }
      }
    }
    const op = fc.record({ run: fc.integer({ min: 0, max: 40 }), output: fc.string({ unit: 'grapheme-ascii', maxLength: 12 }) })
    const limits = [fc.integer({ min: 1, max: 8 }), fc.integer({ min: 12, max: 60 })] as const
    fc.assert(fc.property(...limits, fc.array(op, { maxLength: 120 }), (maxResults, maxBytes, ops) => {
      const book = new ResultBook({ maxResults, maxBytes })
      const model = new Model(maxResults, maxBytes)
      for (const { run, output } of ops) {
        book.record(info(`r${run}`), outcome(output))
        model.record(`r${run}`, output)
      }
      for (let run = 0; run <= 40; run++) {
        const runId = `r${run}`
        expect(book.get(runId)?.output, runId).to.equal(model.kept.find((entry) => entry.runId === runId)?.output)
        expect(book.wasForgotten(runId), runId).to.equal(model.forgotten.includes(runId))
      }
      expect(book.size).to.deep.equal({ results: model.kept.length, bytes: model.kept.reduce((sum, entry) => sum + entry.bytes, 0) })
    }), { numRuns: 300 })
  })

  it('a large cap: 200,000 records through a book of 50,000 keep the latest 50,000 and remember the rest as forgotten', function () {
    // Not a timing check (the cost per record is measured in bench/README's notes); a generous bound for a loaded machine.
    this.timeout(60_000)
    const book = new ResultBook({ maxResults: 50_000, maxBytes: 1e9 })
    for (let i = 0; i < 200_000; i++) book.record(info(`run-${i}`), outcome('x'))
    expect(book.size).to.deep.equal({ results: 50_000, bytes: 50_000 })
    expect(book.get('run-149999')).to.equal(undefined)
    expect(book.get('run-150000')!.output).to.equal('x')
    expect(book.wasForgotten('run-0')).to.equal(true)
    expect(book.wasForgotten('run-149999')).to.equal(true)
  })
})
