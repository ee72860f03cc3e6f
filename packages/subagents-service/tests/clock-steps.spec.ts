/// <reference types="mocha" />
// The OS wall clock steps (an NTP correction, a VM resumed, `date -s`) while runs live: what the service measures in process
// (a run's `durationMs`, a background task's `elapsedMs`, the window a run stays continuable) follows the monotonic clock,
// so a step neither ends nor stretches it; what it shows (`startedAt`, `endedAt`) stays epoch ms. A stored parked run's
// `expiresAt` is a wall-clock deadline: the timer that ends it re-reads the wall clock, so a forward step is seen soon.
import { expect } from 'chai'
import { eventually, withSteppedClock, within } from '@cordis-subagents/test-support'
import { CONTINUE_WINDOW_MS } from '@cordis-subagents/subagents-service'
import { StoredParkDeadlines } from '../src/durable/parked-deadlines.js'
import { FakeProvider, type Harness, providerPlugin, request, setup } from './helpers.js'

const HOUR = 3_600_000
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('ctx.subagents when the wall clock steps', () => {
  let h: Harness
  let fake: FakeProvider

  beforeEach(async () => {
    h = await setup()
    fake = new FakeProvider('fake')
    fake.onRun = (run) => { run.run.continueWith = (_message, next) => fake.start(next) }
    h.ctx.plugin(providerPlugin(fake))
    await h.ctx.lifecycle.flush()
  })
  afterEach(async () => { await h.stop() })

  it('a run\'s durationMs is the time it took, whichever way the clock steps; its startedAt stays epoch ms', async () => {
    await withSteppedClock(async (step) => {
      const before = Date.now()
      const forward = await h.ctx.subagents.delegate('fake', request(h.root))
      expect(forward.info.startedAt).to.be.within(before - 1000, Date.now() + 1000)
      step(HOUR)
      fake.last.complete('ok')
      expect((await forward.result).durationMs, 'a step forward is no hour of work').to.be.below(60_000)
      await forward.dispose()

      const backward = await h.ctx.subagents.delegate('fake', request(h.root))
      step(-2 * HOUR)
      await sleep(20)
      fake.last.complete('ok')
      expect((await backward.result).durationMs, 'a step back does not wipe the time it took').to.be.within(10, 60_000)
      await backward.dispose()
    })
  })

  it('a run stays continuable for its window after a forward step; a backward step does not lengthen the window', async () => {
    await withSteppedClock(async (step) => {
      const run = await h.ctx.subagents.delegate('fake', request(h.root))
      fake.last.complete('first')
      await run.result
      const endedAt = h.ctx.subagents.continuable.list()[0]?.endedAt
      expect(endedAt, 'its end, shown in epoch ms').to.be.within(Date.now() - 1000, Date.now() + 1000)
      await run.dispose()
      step(2 * HOUR)
      expect(h.ctx.subagents.continuable.list().map((info) => info.runId), 'still continuable').to.deep.equal([run.id])
      expect(Object.keys(h.ctx.subagents.continuable.list()[0]).sort())
        .to.deep.equal(['continues', 'endedAt', 'parentId', 'provider', 'runId', 'stopReason'])
      const next = await h.ctx.subagents.continue(run.id, 'go on', { parent: h.root })
      fake.last.complete('second')
      expect((await next.result).output).to.equal('second')
      await next.dispose()

      // Told it ended a whole window ago (the book's test hook), then the clock steps back: it is expired all the same.
      const old = await h.ctx.subagents.delegate('fake', request(h.root))
      fake.last.complete('old')
      const outcome = await old.result
      h.ctx.subagents.continuable.ended(h.ctx.subagents.run(old.id) as never, outcome, Date.now() - CONTINUE_WINDOW_MS)
      await old.dispose()
      step(-4 * HOUR)
      expect(h.ctx.subagents.continuable.list().map((info) => info.runId)).to.not.include(old.id)
      expect(await h.ctx.subagents.continue(old.id, 'more').then(() => 'continued', (error) => error.code)).to.equal('NOT_FOUND')
    })
  })

  it('a child elsewhere is stopped at its maxWallMs though the clock stepped back, by one timer (not one a millisecond)', async () => {
    await withSteppedClock(async (step) => {
      const started = performance.now()
      const run = await h.ctx.subagents.delegate('fake', request(h.root, { budget: { maxWallMs: 300 } }))
      const realSetTimeout = globalThis.setTimeout
      let armed = 0
      globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
        armed++
        return realSetTimeout(...args)
      }) as typeof setTimeout
      let outcome
      try {
        step(-HOUR)
        outcome = await within(run.result, 10_000, 'the run past its maxWallMs')
      } finally {
        globalThis.setTimeout = realSetTimeout
      }
      expect(outcome.stopReason).to.equal('budget')
      expect(outcome.budget).to.include({ budget: 'wallMs', limit: 300 })
      expect(performance.now() - started, 'not before its deadline').to.be.at.least(250)
      expect(armed, 'timers armed while it ran').to.be.below(20)
      await run.dispose()
    })
  })

  it('a background task\'s elapsedMs is the time it ran, not the clock\'s step', async () => {
    await withSteppedClock(async (step) => {
      const task = h.ctx.subagents.background.start({
        parent: h.root, label: 'x', provider: 'fake', onTurnEnd: 'end', turnSignal: new AbortController().signal,
      })
      const startedAt = task.startedAt
      step(HOUR)
      expect(task.elapsedMs, 'running, after a step forward').to.be.within(0, 60_000)
      step(-3 * HOUR)
      expect(task.elapsedMs, 'running, after a step back').to.be.within(0, 60_000)
      task.settle('done', { text: 'done' })
      expect(task.endedAt, 'its end, in (stepped) epoch ms').to.be.below(startedAt - HOUR)
      step(2 * HOUR)
      expect(task.elapsedMs, 'ended, after another step').to.be.within(0, 60_000)
    })
  })
})

describe('a stored parked run\'s deadline (its question\'s expiresAt, wall clock) when the clock steps', () => {
  it('a forward step past the deadline ends the run at the next look at the clock, not after the time that was left', async () => {
    await withSteppedClock(async (step) => {
      const ended: string[] = []
      const deadlines = new StoredParkDeadlines((runId) => ended.push(runId), 20)
      try {
        deadlines.watch('run-1', { id: 'q1', kind: 'ask', text: 'Which?', path: [], expiresAt: Date.now() + HOUR })
        await sleep(50)
        expect(ended, 'not before its deadline').to.deep.equal([])
        step(2 * HOUR)
        await eventually(() => ended.length > 0, 'the run past its deadline ended', 5000)
        expect(ended).to.deep.equal(['run-1'])
      } finally {
        deadlines.close()
      }
    })
  })
})
