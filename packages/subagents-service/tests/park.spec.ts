/// <reference types="mocha" />
import { expect } from 'chai'
import { MAX_ANSWER_LENGTH, type PendingQuestion } from '@cordis-subagents/shared'
import {
  type JournalledRun, MAX_PARKED_PER_PARENT, NO_JOURNAL, type RunJournal, type SubagentHandle, type SubagentOutcome,
} from '@cordis-subagents/subagents-service'
import { type Harness, FakeProvider, recordEvents, rejection, request, setup, tick } from './helpers.js'

describe('parking: pending and interrupted runs, resume, and the host verbs', () => {
  let h: Harness
  let fake: FakeProvider

  beforeEach(async () => {
    h = await setup()
    fake = new FakeProvider('fake')
    fake.parkable = true
    h.ctx.subagents.register(fake)
  })
  afterEach(async () => { await h.stop() })

  const delegate = (): Promise<SubagentHandle> => h.ctx.subagents.delegate('fake', request(h.root))

  it('a pending result parks the run: first outcome pending with the question, no end, subagent/pending, slots and run kept', async () => {
    const events = recordEvents(h.ctx)
    const pending: [string, PendingQuestion][] = []
    h.ctx.on('subagent/pending', (info, question) => { pending.push([info.runId, question]) })
    const run = await delegate()
    fake.last.ask('Which branch?')
    const first = await run.result
    expect(first).to.include({ stopReason: 'pending' })
    expect(first.question).to.include({ kind: 'ask', text: 'Which branch?' }).and.to.have.property('path').that.deep.equals([])
    expect(run.state).to.equal('parked')
    expect(run.question).to.deep.equal(first.question)
    expect(events.log.filter((line) => line.startsWith('end:'))).to.deep.equal([])
    expect(pending).to.deep.equal([[run.id, first.question]])
    expect(h.ctx.subagents.runs().map((info) => info.runId)).to.deep.equal([run.id])
    expect(h.ctx.subagents.pending()).to.deep.equal([{ runId: run.id, parentId: h.root.id, question: first.question }])
    expect(fake.last.disposeCalls).to.equal(0)
    await run.dispose()
  })

  it('resume passes the answer on, emits subagent/resume, and settles with the next outcome; result stays the first', async () => {
    const events = recordEvents(h.ctx)
    const resumed: string[] = []
    h.ctx.on('subagent/resume', (info, questionId) => { resumed.push(`${info.runId}:${questionId}`) })
    const run = await delegate()
    fake.last.ask()
    const first = await run.result
    const next = run.resume('main')
    expect(run.state).to.equal('running')
    expect(fake.last.answers).to.deep.equal(['main'])
    expect(resumed).to.deep.equal([`${run.id}:${first.question!.id}`])
    fake.last.ask('And the tag?')
    const second = await next
    expect(second.question).to.include({ text: 'And the tag?' })
    const third = run.resume('v1')
    fake.last.complete('merged', { usage: { inputTokens: 10, outputTokens: 5 } })
    expect(await third).to.include({ stopReason: 'completed', output: 'merged' })
    expect(run.state).to.equal('ended')
    expect(await run.result).to.equal(first)
    expect(events.log.filter((line) => line.startsWith('end:'))).to.deep.equal([`end:${run.id}:completed`])
    await run.dispose()
    expect(h.ctx.subagents.runs()).to.deep.equal([])
  })

  it('resume refuses with codes: NOT_PARKED while running, INVALID_REQUEST for a bad answer, UNSUPPORTED without the verb', async () => {
    const run = await delegate()
    expect(() => run.resume('early')).to.throw().with.property('code', 'NOT_PARKED')
    fake.last.ask()
    await run.result
    for (const answer of ['', '  \n', 42, 'x'.repeat(MAX_ANSWER_LENGTH + 1)]) {
      expect(() => run.resume(answer as string), String(answer).slice(0, 10)).to.throw().with.property('code', 'INVALID_REQUEST')
    }
    expect(fake.last.answers).to.deep.equal([])
    expect(run.state).to.equal('parked')
    await run.dispose()

    const plain = new FakeProvider('plain')
    h.ctx.subagents.register(plain)
    const other = await h.ctx.subagents.delegate('plain', request(h.root))
    plain.last.ask()
    await other.result
    expect(() => other.resume('yes')).to.throw().with.property('code', 'UNSUPPORTED')
    await other.dispose()
  })

  it('a pending result without a well-formed question is an error outcome that ends the run', async () => {
    const run = await delegate()
    fake.last.finish({ stopReason: 'pending', output: '', question: { id: 'q', kind: 'nonsense', text: 'x', path: [] } })
    const outcome = await run.result
    expect(outcome.stopReason).to.equal('error')
    expect(outcome.diagnostic).to.match(/a pending result needs a question: the question's kind must be one of/)
    expect(run.state).to.equal('ended')
    await run.dispose()
  })

  it('ctx.subagents.resume by run id: NOT_FOUND for an unknown id, INVALID_REQUEST for a malformed one, else the next outcome', async () => {
    expect(await rejection(h.ctx.subagents.resume('run-nope', 'x'))).to.have.property('code', 'NOT_FOUND')
    expect(await rejection(h.ctx.subagents.resume(42 as never, 'x'))).to.have.property('code', 'INVALID_REQUEST')
    const run = await delegate()
    fake.last.ask()
    await run.result
    const next = h.ctx.subagents.resume(run.id, 'go')
    fake.last.complete('went')
    expect(await next).to.include({ stopReason: 'completed', output: 'went' })
    expect(await rejection(h.ctx.subagents.resume(run.id, 'again'))).to.have.property('code', 'ALREADY_ANSWERED')
    await run.dispose()
    expect(await rejection(h.ctx.subagents.resume(run.id, 'late'))).to.have.property('code', 'NOT_FOUND')
  })

  it('interrupt → interrupted (idle, no end); wake runs the next turn; close ends it closed with one end event', async () => {
    const events = recordEvents(h.ctx)
    const run = await delegate()
    const interrupted = await h.ctx.subagents.interrupt(run.id)
    expect(interrupted).to.include({ stopReason: 'interrupted', output: 'partial' })
    expect(run.state).to.equal('interrupted')
    expect(events.log.filter((line) => line.startsWith('end:'))).to.deep.equal([])
    expect(await rejection(h.ctx.subagents.interrupt(run.id))).to.have.property('code', 'NOT_RUNNING')
    const woken = h.ctx.subagents.wake(run.id)
    expect(run.state).to.equal('running')
    expect(await rejection(h.ctx.subagents.wake(run.id))).to.have.property('code', 'NOT_PARKED')
    fake.last.ask('Keep going?')
    expect(await woken).to.include({ stopReason: 'pending' })
    const closed = await h.ctx.subagents.close(run.id)
    expect(closed).to.include({ stopReason: 'closed' })
    expect(fake.last.verbs).to.deep.equal(['interrupt', 'wake', 'close'])
    expect(events.log.filter((line) => line.startsWith('end:'))).to.deep.equal([`end:${run.id}:closed`])
    expect(await rejection(h.ctx.subagents.close(run.id))).to.have.property('code', 'NOT_RUNNING')
    await run.dispose()
    expect(await rejection(h.ctx.subagents.wake(run.id))).to.have.property('code', 'NOT_FOUND')
  })

  it('close on a running run interrupts it first; a provider without the verbs is UNSUPPORTED', async () => {
    const run = await delegate()
    expect(await h.ctx.subagents.close(run.id)).to.include({ stopReason: 'closed' })
    expect(fake.last.verbs).to.deep.equal(['interrupt', 'close'])
    await run.dispose()
    const plain = new FakeProvider('plain')
    h.ctx.subagents.register(plain)
    const other = await h.ctx.subagents.delegate('plain', request(h.root))
    expect(await rejection(h.ctx.subagents.interrupt(other.id))).to.have.property('code', 'UNSUPPORTED')
    expect(await rejection(h.ctx.subagents.close(other.id))).to.have.property('code', 'UNSUPPORTED')
    await other.dispose()
  })

  it('a cancel or dispose of a parked run ends it aborted (one end event) and frees it', async () => {
    const events = recordEvents(h.ctx)
    const run = await delegate()
    fake.last.ask('Which one?')
    await run.result
    run.cancel('no longer needed')
    const final = await run.current()
    expect(final.stopReason).to.equal('aborted')
    expect(final.diagnostic).to.match(/cancelled while parked on the question "Which one\?": no longer needed/)
    expect(run.state).to.equal('ended')
    expect(events.log.filter((line) => line.startsWith('end:'))).to.deep.equal([`end:${run.id}:aborted`])
    await run.dispose()
    expect(h.ctx.subagents.runs()).to.deep.equal([])
  })

  it('the journal hears started, parked, resumed and settled in order; a throwing hook is logged, never breaks the run', async () => {
    const heard: string[] = []
    const journal: RunJournal = {
      started: (run: JournalledRun) => { heard.push(`started:${run.id}`) },
      parked: (run, question) => { heard.push(`parked:${question.text}:${JSON.stringify(run.checkpoint())}`) },
      resumed: (_run, questionId, answer) => { heard.push(`resumed:${questionId.startsWith('q-')}:${answer}`) },
      settled: (_run, outcome: SubagentOutcome) => { heard.push(`settled:${outcome.stopReason}`); throw new Error('disk full') },
    }
    const withdraw = h.ctx.subagents.useJournal(journal)
    const run = await delegate()
    fake.last.ask('Why?')
    await run.result
    const next = run.resume('because')
    fake.last.complete()
    await next
    await run.dispose()
    expect(heard).to.deep.equal([`started:${run.id}`, 'parked:Why?:{"fake":"checkpoint"}', 'resumed:true:because', 'settled:completed'])
    expect(h.warnings.some((line) => /journal hook settled failed \(ignored\): .*disk full/.test(line))).to.equal(true)
    withdraw()
    const second = await delegate()
    fake.last.complete()
    await second.result
    await second.dispose()
    expect(heard).to.have.length(4)
  })

  it('a journal whose reattached hook throws: the start goes to the provider as it is, and its slot comes back', async () => {
    const withdraw = h.ctx.subagents.useJournal({ ...NO_JOURNAL, reattached: () => { throw new Error('the journal broke') } })
    try {
      for (let i = 0; i < 3; i++) {
        const run = await h.ctx.subagents.delegate('fake', request(h.root, { prompt: `Review PR ${90 + i}.`, reattach: true }))
        fake.last.complete(`reviewed ${i}`)
        expect(await run.result).to.include({ output: `reviewed ${i}` })
        await run.dispose()
      }
      expect(fake.calls).to.have.length(3)
      expect(h.ctx.subagents.runs()).to.deep.equal([])
    } finally {
      withdraw()
    }
  })

  describe('reattach by task key', () => {
    const same = () => request(h.root, { prompt: 'Review PR 7.', reattach: true })

    it('the same task while live gets an attached handle (no second start); its cancel and dispose do nothing', async () => {
      const owner = await h.ctx.subagents.delegate('fake', same())
      const attached = await h.ctx.subagents.delegate('fake', same())
      expect(fake.calls).to.have.length(1)
      expect(attached.id).to.equal(owner.id)
      expect(attached.attached).to.equal(true)
      attached.cancel('not mine')
      await attached.dispose()
      expect(owner.state).to.equal('running')
      fake.last.complete('reviewed')
      expect(await attached.result).to.include({ output: 'reviewed' })
      await owner.dispose()
      // Ended completed and retained: the same task again gets its outcome, still no start.
      const later = await h.ctx.subagents.delegate('fake', same())
      expect(await later.result).to.include({ stopReason: 'completed', output: 'reviewed' })
      expect(fake.calls).to.have.length(1)
    })

    it('a parked task gives its question; a failed one is forgotten; other prompts, parents or no reattach start afresh', async () => {
      const owner = await h.ctx.subagents.delegate('fake', same())
      fake.last.ask('Which commit?')
      await owner.result
      const again = await h.ctx.subagents.delegate('fake', same())
      expect((await again.result).question).to.include({ text: 'Which commit?' })
      const next = again.resume('HEAD')
      fake.last.finish({ stopReason: 'error', output: '', diagnostic: 'boom' })
      expect((await next).stopReason).to.equal('error')
      await owner.dispose()
      const retry = await h.ctx.subagents.delegate('fake', same())
      expect(fake.calls).to.have.length(2)
      expect(retry.attached).to.equal(undefined)
      const other = await h.ctx.subagents.delegate('fake', request(h.root, { prompt: 'Review PR 8.', reattach: true }))
      const plain = await h.ctx.subagents.delegate('fake', request(h.root, { prompt: 'Review PR 7.' }))
      const sibling = h.ctx.agents.create({ label: 'sibling' })
      const elsewhere = await h.ctx.subagents.delegate('fake', request(sibling, { prompt: 'Review PR 7.', reattach: true }))
      expect(fake.calls).to.have.length(5)
      for (const run of [retry, other, plain, elsewhere]) await run.dispose()
    })
  })

  describe('the parked book', () => {
    it('holds a parked run until it ends (then disposes it) or its parent is disposed', async () => {
      const run = await delegate()
      fake.last.ask()
      await run.result
      h.ctx.subagents.parked.hold(h.root, run.id)
      expect(h.ctx.subagents.parked.get(h.root, run.id)).to.equal(run)
      const next = run.resume('ok')
      fake.last.complete()
      await next
      await tick()
      expect(fake.last.disposeCalls).to.equal(1)
      expect(h.ctx.subagents.parked.list(h.root)).to.deep.equal([])

      const parent = h.ctx.agents.create({ label: 'parent' })
      const held = await h.ctx.subagents.delegate('fake', request(parent))
      fake.last.ask()
      await held.result
      h.ctx.subagents.parked.hold(parent, held.id)
      await parent.dispose()
      await tick()
      expect(fake.last.disposeCalls).to.equal(1)
      expect(held.state).to.equal('ended')
    })

    it(`holds at most ${MAX_PARKED_PER_PARENT} per parent (PARKED_LIMIT); NOT_FOUND for a run that is not live`, async () => {
      await h.stop()
      const room = MAX_PARKED_PER_PARENT + 1
      h = await setup({ maxConcurrentPerParent: room, maxChildren: room, maxConcurrent: room })
      fake = new FakeProvider('fake')
      fake.parkable = true
      h.ctx.subagents.register(fake)
      const runs: SubagentHandle[] = []
      for (let i = 0; i <= MAX_PARKED_PER_PARENT; i++) {
        const run = await delegate()
        fake.last.ask()
        await run.result
        runs.push(run)
      }
      for (const run of runs.slice(0, MAX_PARKED_PER_PARENT)) h.ctx.subagents.parked.hold(h.root, run.id)
      expect(() => h.ctx.subagents.parked.hold(h.root, runs[MAX_PARKED_PER_PARENT].id)).to.throw().with.property('code', 'PARKED_LIMIT')
      expect(() => h.ctx.subagents.parked.hold(h.root, 'run-gone')).to.throw().with.property('code', 'NOT_FOUND')
      for (const run of runs) await run.dispose()
    })
  })
})
