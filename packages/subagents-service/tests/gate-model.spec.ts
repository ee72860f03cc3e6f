/// <reference types="mocha" />
import { expect } from 'chai'
import fc from 'fast-check'
import type { Agent } from '@cordis-subagents/agent'
import type { SubagentHandle } from '@cordis-subagents/subagents-service'
import { FakeProvider, request, setup, tick } from './helpers.js'

type Op =
  | { kind: 'start'; parent: number }
  | { kind: 'abort'; pick: number }
  | { kind: 'dispose'; pick: number }
  | { kind: 'complete'; pick: number }

interface Entry {
  id: number
  parent: number
  controller: AbortController
  state: 'waiting' | 'live' | 'rejected' | 'disposed'
  abortedWhileWaiting: boolean
  handle?: SubagentHandle
}

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('start' as const), parent: fc.integer({ min: 0, max: 1 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('abort' as const), pick: fc.nat() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('dispose' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('complete' as const), pick: fc.nat() }) },
)

describe('the per-parent gate (model-based)', () => {
  it('never exceeds the limit, admits FIFO, never calls the provider for an aborted waiter, and frees every slot', async () => {
    await fc.assert(fc.asyncProperty(fc.integer({ min: 1, max: 3 }), fc.array(op, { maxLength: 40 }), async (max, ops) => {
      const h = await setup({ maxConcurrentPerParent: max })
      try {
        const provider = new FakeProvider('alpha')
        h.ctx.subagents.register(provider)
        const parents: Agent[] = [h.root, h.ctx.agents.create({ label: 'second-root' })]
        const entries: Entry[] = []
        const pickFrom = (list: Entry[], pick: number) => list.length ? list[pick % list.length] : undefined

        const check = () => {
          for (const parent of [0, 1]) {
            const mine = entries.filter((entry) => entry.parent === parent)
            const live = mine.filter((entry) => entry.state === 'live').length
            expect(live, 'live children of one parent').to.be.at.most(max)
            // Work-conserving: nobody waits while a slot is free.
            if (live < max) expect(mine.filter((entry) => entry.state === 'waiting'), 'waiting with a free slot').to.deep.equal([])
            // FIFO: the provider saw this parent's admitted starts in issue order.
            const called = provider.calls.filter((call) => call.parent === parents[parent]).map((call) => call.prompt)
            const admitted = mine.filter((entry) => entry.state === 'live' || entry.state === 'disposed').map((entry) => `s${entry.id}`)
            expect(called).to.deep.equal(admitted)
          }
          for (const entry of entries) {
            if (entry.abortedWhileWaiting) {
              expect(provider.calls.map((call) => call.prompt)).to.not.include(`s${entry.id}`)
            }
          }
          const live = entries.filter((entry) => entry.state === 'live').map((entry) => entry.handle!.id).sort()
          expect(h.ctx.subagents.runs().map((info) => info.runId).sort()).to.deep.equal(live)
        }

        for (const step of ops) {
          if (step.kind === 'start') {
            const entry: Entry = {
              id: entries.length, parent: step.parent, controller: new AbortController(), state: 'waiting', abortedWhileWaiting: false,
            }
            entries.push(entry)
            h.ctx.subagents.delegate('alpha', request(parents[step.parent], { prompt: `s${entry.id}`, signal: entry.controller.signal }))
              .then((handle) => { entry.handle = handle; entry.state = 'live' }, () => { entry.state = 'rejected' })
          } else if (step.kind === 'abort') {
            const entry = pickFrom(entries.filter((e) => e.state === 'waiting' || e.state === 'live'), step.pick)
            if (entry) {
              if (entry.state === 'waiting') entry.abortedWhileWaiting = true
              entry.controller.abort()
            }
          } else if (step.kind === 'dispose') {
            const entry = pickFrom(entries.filter((e) => e.state === 'live'), step.pick)
            if (entry) {
              await entry.handle!.dispose()
              entry.state = 'disposed'
            }
          } else {
            const entry = pickFrom(entries.filter((e) => e.state === 'live'), step.pick)
            const run = entry && provider.runs.find((r) => r.request.runId === entry.handle!.id)
            if (run && !run.outcome.settled) run.complete()
          }
          await tick(1)
          check()
        }

        // Drain: dispose every live run; every waiter gets in and is disposed in turn.
        for (let round = 0; round < 100 && entries.some((e) => e.state === 'waiting' || e.state === 'live'); round++) {
          for (const entry of entries.filter((e) => e.state === 'live')) {
            await entry.handle!.dispose()
            entry.state = 'disposed'
          }
          await tick(1)
          check()
        }
        expect(entries.filter((e) => e.state === 'waiting' || e.state === 'live')).to.deep.equal([])
        expect(h.ctx.subagents.runs()).to.deep.equal([])
        for (const entry of entries) {
          if (entry.state === 'rejected') expect(entry.abortedWhileWaiting || entry.controller.signal.aborted).to.equal(true)
        }
      } finally {
        await h.stop()
      }
    }), { numRuns: 60 })
  })
})
