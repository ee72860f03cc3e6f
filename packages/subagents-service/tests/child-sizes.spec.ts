/// <reference types="mocha" />
import { expect } from 'chai'
import { LRUCache } from 'lru-cache'
import type { AgentObserver } from '@cordis-subagents/agent'
import type { SubagentOutcome } from '@cordis-subagents/subagents-service'
import { continuableEnded, runObserver } from '../src/after-run.js'
import { ChildSizes } from '../src/verbs/child-sizes.js'
import type { ContinuableEntry, DroppedRun } from '../src/verbs/results.js'

// The continuable book sizes each child's transcript while it runs (`ChildSizes`, a bounded map by agent id). A child whose size
// was lost for room is booked past every bound when its run ends (not kept, `dropped`), never as the 4 KiB of a child that was
// never sized, nor as what it added after the loss. Driven directly here, with the bound lowered to 2 children.

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function book(max = 2) {
  const sizes = new ChildSizes(max)
  const runs = {
    sizes,
    book: new LRUCache<string, ContinuableEntry>({ max: 64, maxSize: 1 << 20 }),
    dropped: new LRUCache<string, DroppedRun>({ max: 64 }),
    inFlight: new Map<string, number>(),
  }
  const observer: AgentObserver = runObserver(undefined as never, sizes)
  const child = (id: string) => ({ id, parent: { id: 'root' } }) as never
  return {
    sizes,
    runs,
    /** Child `id`'s turn starts with a prompt of `length` characters. */
    start: (id: string, length = 100) => observer.runStart!(child(id), 'p'.repeat(length)),
    /** Child `id`'s model answers `length` characters. */
    answer: (id: string, length: number) => observer.modelCallEnd!(child(id), 1, { text: 'a'.repeat(length), toolCalls: [] } as never),
    /** Run `runId` of child `childId` ends, having run `durationMs`: its size in the book, or undefined when not kept. */
    end(runId: string, childId: string, durationMs = 0): number | undefined {
      const run = { id: runId, childId, providerRun: { continueWith() {} }, info: { provider: 'p', parentId: 'root' } }
      continuableEnded(runs as never, run as never, { stopReason: 'completed', output: 'ok', durationMs } as SubagentOutcome)
      return runs.book.peek(runId)?.size
    },
  }
}

describe('the continuable book\'s child sizes, past their bound', () => {
  it('the child sized first is lost: its run is not kept (dropped), the others are sized, a child never sized is 4 KiB', () => {
    const b = book()
    b.start('a')
    b.start('b')
    b.answer('a', 1000) // growing keeps a child's place: a, sized first, still goes first
    b.start('c')
    b.answer('a', 5000) // lost: what it adds now is not its size
    b.answer('b', 1000)
    expect(b.end('run-a', 'a'), 'lost: not kept').to.equal(undefined)
    expect(b.runs.dropped.get('run-a'), 'dropped: a continue says why').to.deep.equal({ parentId: 'root', unsized: true })
    expect(b.end('run-b', 'b')).to.equal(64 + 100 + 64 + 1000)
    expect(b.end('run-c', 'c')).to.equal(64 + 100)
    expect(b.end('run-r', 'remote'), 'a child not on ctx.agents: 4 KiB and its output').to.equal(4096 + 2)
    expect(b.sizes.size, 'every run\'s end took its child').to.equal(0)
    // Taken: the lost id is free again (the same agent's next run is sized afresh).
    b.start('a')
    expect(b.end('run-a2', 'a')).to.equal(64 + 100)
  })

  it('a continue counts on from the transcript it goes on from; lost meanwhile, its run is not kept', () => {
    const b = book()
    b.sizes.continue('k', 50_000)
    b.answer('k', 10)
    expect(b.end('run-k', 'k')).to.equal(50_000 + 64 + 10)
    b.sizes.continue('k', 50_000)
    b.start('x')
    b.start('y')
    b.answer('k', 10)
    expect(b.end('run-k2', 'k')).to.equal(undefined)
    expect(b.runs.dropped.has('run-k2')).to.equal(true)
    b.sizes.continue('f', 10)
    b.sizes.drop('f') // a continue that did not start
    expect(b.sizes.has('f')).to.equal(false)
  })

  it('once a lost id is forgotten, a run it may have been is not kept; one that began after the forgetting is', async () => {
    const b = book()
    b.start('old')
    b.sizes.continue('cont', 1000)
    // 2 sized at most, 8 lost ids kept: 12 more children lose 12, and the first 4 lost are forgotten ('old' and 'cont' first).
    for (let i = 0; i < 12; i++) b.start(`other-${i}`)
    expect(b.sizes.lost.has('old') || b.sizes.lost.has('cont')).to.equal(false)
    // The two sized last end (room again: nothing more is lost or forgotten), a while after the forgetting.
    await wait(20)
    expect([b.end('run-10', 'other-10'), b.end('run-11', 'other-11')]).to.deep.equal([164, 164])
    b.start('old') // no longer known as lost: sized afresh from here, far below what it holds
    expect(b.end('run-old', 'old', 60_000), 'began before the forgetting: not kept').to.equal(undefined)
    expect(b.end('run-remote', 'remote', 60_000), 'a child never sized, began before it: not kept either').to.equal(undefined)
    b.start('cont')
    expect(b.end('run-cont', 'cont', 0), 'its continue set it before the forgetting: not kept').to.equal(undefined)
    b.start('new')
    expect(b.end('run-new', 'new', 1), 'began after it').to.equal(64 + 100)
    expect(b.end('run-remote2', 'remote2', 1)).to.equal(4096 + 2)
  })
})
