/// <reference types="mocha" />
import { expect } from 'chai'
import fc from 'fast-check'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { type Message, Transcript } from '@cordis-subagents/agent'

// A transcript seeded with another (`create({ seed: parent.transcript })`, the fork provider's child) reads the other's
// completed turns from the other's own storage, copying nothing. Whatever either side does afterwards (turns that go on,
// messages of a turn in flight taken back, more forks, forks of forks, seeds from `completed()`), each one's messages are
// exactly its own story: the completed turns it was seeded with, then its own.

interface Story { messages: string[]; turnStart?: number }

type Op =
  | { kind: 'begin' | 'push' | 'end' | 'fork' | 'forkFrozen'; at: number }
  | { kind: 'remove'; at: number; from: number; count: number }

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constantFrom('begin', 'push', 'push', 'push', 'end', 'fork', 'forkFrozen'), at: fc.nat(20) }) as fc.Arbitrary<Op>,
  fc.record({ kind: fc.constant('remove' as const), at: fc.nat(20), from: fc.nat(8), count: fc.nat(3) }),
)

const contents = (messages: readonly Message[]) => messages.map((message) => message.content)

describe('a transcript seeded with another transcript', () => {
  it('sees the other\'s completed turns as they were when seeded, and its own messages after them, whatever either does next', () => {
    fc.assert(fc.property(fc.array(op, { minLength: 1, maxLength: 120 }), (ops) => {
      const transcripts = [new Transcript()]
      const stories: Story[] = [{ messages: [] }]
      let next = 0
      for (const step of ops) {
        const i = step.at % transcripts.length
        const transcript = transcripts[i]
        const story = stories[i]
        switch (step.kind) {
          case 'begin':
            if (story.turnStart !== undefined) break
            transcript.beginTurn()
            story.turnStart = story.messages.length
            break
          case 'push': {
            const content = `m${next++}`
            transcript.push({ role: next % 2 ? 'user' : 'assistant', content })
            story.messages.push(content)
            break
          }
          case 'end':
            if (story.turnStart === undefined) break
            transcript.endTurn()
            story.turnStart = undefined
            break
          case 'remove': {
            if (story.turnStart === undefined) break
            const inFlight = story.messages.length - story.turnStart
            const from = story.turnStart + step.from % (inFlight + 1)
            const count = Math.min(step.count, story.messages.length - from)
            transcript.removeInFlight(from, count)
            story.messages.splice(from, count)
            break
          }
          case 'fork':
          case 'forkFrozen': {
            const completed = story.messages.slice(0, story.turnStart ?? story.messages.length)
            transcripts.push(new Transcript(step.kind === 'fork' ? transcript : transcript.completed()))
            stories.push({ messages: completed })
            break
          }
        }
        transcripts.forEach((each, j) => {
          const expected = stories[j]
          expect(contents(each.messages)).to.deep.equal(expected.messages)
          expect(contents(each.snapshot())).to.deep.equal(expected.messages)
          expect(each.length).to.equal(expected.messages.length)
          expect(contents(each.completed())).to.deep.equal(expected.messages.slice(0, expected.turnStart ?? expected.messages.length))
          expect(contents(each.completedMessages())).to.deep.equal(contents(each.completed()))
        })
      }
    }), {
      numRuns: 500,
      // A fork of a fork that has messages of its own since its seed (both parts: one copy), every time.
      examples: [[[{ kind: 'push', at: 0 }, { kind: 'forkFrozen', at: 0 }, { kind: 'push', at: 1 }, { kind: 'fork', at: 1 }, { kind: 'begin', at: 0 }]]],
    })
  })

  it('a turn is never reopened below what another transcript reads in place (its messages stay as the seed saw them)', () => {
    const parent = new Transcript()
    parent.push({ role: 'user', content: 'q1' })
    parent.push({ role: 'assistant', content: 'a1' })
    // Reopening before anything is seeded is a restore's business, and allowed.
    parent.reopenTurn(1)
    parent.endTurn()
    const child = new Transcript(parent)
    expect(() => parent.reopenTurn(1)).to.throw(RangeError, /below the 2 messages another transcript was seeded with/)
    parent.reopenTurn(2)
    parent.push({ role: 'user', content: 'q2' })
    parent.removeInFlight(2, 1)
    expect(contents(child.messages)).to.deep.equal(['q1', 'a1'])
  })

  it('copies no history to seed: 200 forks of a 50,000-message history, one a turn, hold no copy of it', () => {
    // With `--expose-gc` set at run time, `gc` is reachable through a new context.
    setFlagsFromString('--expose-gc')
    const gc = runInNewContext('gc') as () => void
    const parent = new Transcript()
    for (let i = 0; i < 50_000; i++) parent.push({ role: i % 2 ? 'assistant' : 'user', content: 'm' })
    const children: Transcript[] = []
    gc()
    const before = process.memoryUsage().heapUsed
    for (let turn = 0; turn < 200; turn++) {
      parent.beginTurn()
      parent.push({ role: 'user', content: `turn ${turn}` })
      // Mid-turn, as the fork provider seeds: the completed turns only.
      children.push(new Transcript(parent))
      parent.push({ role: 'assistant', content: 'done' })
      parent.endTurn()
    }
    gc()
    const grown = process.memoryUsage().heapUsed - before
    // A copy of the history per turn (a frozen completed() array and its plain twin, 2 × 400 KB) would be 160 MB here.
    expect(grown, `${(grown / 1024 / 1024).toFixed(1)} MB`).to.be.below(16 * 1024 * 1024)
    expect(children[199].length).to.equal(50_000 + 2 * 199)
    expect(children[199].messages[50_000 + 2 * 199 - 1].content).to.equal('done')
    expect(children[0].messages[50_000 - 1]).to.equal(parent.messages[50_000 - 1])
  })
})
