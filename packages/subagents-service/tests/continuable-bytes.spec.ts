/// <reference types="mocha" />
// The book of continuable runs holds each run's child transcript for up to an hour: it is bounded in bytes as well as in
// count, so children with big transcripts that nobody continues cannot pin hundreds of MiB (audit: 256 × ~1 MiB, 13 →
// 265 MB of heap). Children here are real agents of ctx.agents with a scripted model, run by a provider of the test's own.
import { expect } from 'chai'
import type { Context } from 'cordis'
import type { Agent, AgentCheckpoint, ChatModel, GenerateRequest, GenerateResponse, Message } from '@cordis-subagents/agent'
import {
  MAX_CONTINUABLE_RUNS, type ProviderStartRequest, type SubagentProvider, type SubagentRun,
} from '@cordis-subagents/subagents-service'
import { runObserver } from '../src/after-run.js'
import { MAX_CONTINUABLE_BYTES, MAX_SIZED_CHILDREN } from '../src/verbs/results.js'
import { callsSize, imagesSize } from '../src/verbs/transcript-parts.js'
import { deferred, type Harness, NONE, rejection, request, setup } from './helpers.js'

const CHILD = 'CHILD: '
const STEPS = 10
/** Per step, the child's text and the input of its tool call: 100 KiB a step, about 1 MiB a child. */
const HALF = 'x'.repeat(50 * 1024)

/** A child prompted with this answers `huge` at once. */
const HUGE = `${CHILD}huge`
let huge: string | undefined
/** While set, the next child to finish its steps tells `reached` and waits for `release` before its answer. */
let holdAnswer: { reached: () => void; release: Promise<void> } | undefined

/** A child: STEPS steps, each HALF of text and a call whose input carries HALF more (to a tool that does not exist), then its answer. */
const childModel: ChatModel = {
  async generate(request: GenerateRequest): Promise<GenerateResponse> {
    const last = request.messages.at(-1)!
    const answer = (text: string): GenerateResponse => ({ text, toolCalls: [], finishReason: 'stop' })
    if (last.content === HUGE) return answer(huge!)
    if (last.role === 'user' && !last.content.startsWith(CHILD)) return answer(`continued: ${last.content}`)
    const steps = request.messages.filter((message) => message.role === 'assistant').length
    if (steps >= STEPS) {
      const hold = holdAnswer
      holdAnswer = undefined
      hold?.reached()
      await hold?.release
      return answer('child answer')
    }
    return {
      text: HALF,
      toolCalls: [{ id: `call-${steps}`, name: 'write_file', input: { path: `f${steps}`, content: HALF } }],
      finishReason: 'tool-calls',
    }
  },
}

/** What a transcript holds, counted independently of the service: every text, and every tool call's input as JSON. */
function held(messages: readonly Message[]): number {
  let size = 0
  for (const message of messages) {
    size += message.content.length
    if (message.role === 'assistant') for (const call of message.toolCalls ?? []) size += JSON.stringify(call.input).length
  }
  return size
}

/**
 * An in-process provider whose runs can be continued (as spawn's: the child rebuilt from its checkpoint, the same agent id).
 * `sizes`: what each run's child holds when its turn ends (`held`), by run id.
 */
function inProcess(agents: Context['agents'], sizes: Map<string, number>): SubagentProvider {
  const start = (request: ProviderStartRequest, restore?: AgentCheckpoint): Promise<SubagentRun> => {
    const { parent, budget } = request
    const child: Agent = agents.create(restore ? { parent, budget, restore } : { parent, budget, model: 'child', tools: parent.tools })
    const result = child.run(request.prompt).then((run) => {
      sizes.set(request.runId, held(child.transcript.messages))
      return { stopReason: run.stopReason, output: run.text }
    })
    return Promise.resolve({
      id: request.runId,
      childId: child.id,
      result,
      cancel: () => child.abort(),
      dispose: () => child.dispose(),
      continueWith: (message, next) => start({ ...next, prompt: message }, child.checkpoint()),
    })
  }
  return { name: 'inproc', capabilities: NONE, inheritsParentContext: false, start }
}

describe('the continuable book is bounded in bytes', function () {
  this.timeout(60_000)
  let h: Harness
  let sizes: Map<string, number>

  beforeEach(async () => {
    h = await setup()
    h.ctx.agents.registerModel('child', childModel)
    sizes = new Map()
    h.ctx.subagents.register(inProcess(h.ctx.agents, sizes))
  })
  afterEach(async () => { await h.stop() })

  /** One delegation from a root of its own (disposed after, as a plain delegation's parent is): its run id. */
  async function delegated(prompt = `${CHILD}look`): Promise<string> {
    const root = h.ctx.agents.create({})
    const run = await h.ctx.subagents.delegate('inproc', request(root, { prompt }))
    expect((await run.result).stopReason).to.equal('completed')
    await run.dispose()
    await root.dispose()
    return run.id
  }

  it('children with big transcripts end: what the book keeps stays under its bound, the newest go on, a dropped one says so', async () => {
    const count = Math.ceil(MAX_CONTINUABLE_BYTES / (STEPS * 2 * HALF.length)) + 16
    expect(count, 'fewer runs than the count bound: only bytes can drop one').to.be.below(MAX_CONTINUABLE_RUNS)
    const ids: string[] = []
    for (let i = 0; i < count; i++) ids.push(await delegated())
    expect(sizes.get(ids[0]), 'a child holds about 1 MiB').to.be.above(STEPS * 2 * HALF.length)

    const kept = h.ctx.subagents.continuable.list().map((run) => run.runId)
    const retained = kept.reduce((sum, runId) => sum + sizes.get(runId)!, 0)
    expect(retained, `the transcripts the book keeps (${kept.length} of ${count} runs)`).to.be.at.most(MAX_CONTINUABLE_BYTES)
    expect(kept.length, 'most of the budget is used').to.be.above(MAX_CONTINUABLE_BYTES / sizes.get(ids[0])! - 8)
    expect(kept, 'the newest runs, in the order they ended').to.deep.equal(ids.slice(-kept.length))

    // The newest is continued on its whole transcript.
    const next = await h.ctx.subagents.continue(ids.at(-1)!, 'one more thing')
    const outcome = await next.result
    expect(outcome.output).to.equal('continued: one more thing')
    expect(sizes.get(next.id), 'the new turn ran on the old transcript').to.be.above(STEPS * 2 * HALF.length)
    await next.dispose()
    expect(h.ctx.subagents.continuable.book.peek(next.id)?.size, 'kept again, counted with the transcript it went on from')
      .to.be.at.least(sizes.get(next.id)!)

    // The oldest was dropped for room: its continue is refused, and the refusal says why.
    const error = await rejection(h.ctx.subagents.continue(ids[0], 'and you?'))
    expect(error.code).to.equal('NOT_FOUND')
    expect(error.message).to.match(/dropped to bound memory/)
    expect(error.message).to.include(`${MAX_CONTINUABLE_BYTES / 1024 / 1024} MiB`)
    // A run id never seen, and a dropped run asked for by an agent that did not delegate it, get the usual answer.
    expect((await rejection(h.ctx.subagents.continue('no-such-run', 'hi'))).message).to.not.match(/dropped/)
    const foreign = await rejection(h.ctx.subagents.continue(ids[0], 'hi', { parent: h.root }))
    expect(foreign.code).to.equal('NOT_FOUND')
    expect(foreign.message).to.include('by you').and.not.match(/dropped/)

    const now = h.ctx.subagents.continuable.list().map((run) => run.runId)
    const { runs, bytes } = h.ctx.subagents.continuable.size
    expect(runs).to.equal(now.length)
    expect(bytes, 'the book\'s own count: at least what the test counts').to.be.within(now.reduce((sum, runId) => sum + sizes.get(runId)!, 0),
      MAX_CONTINUABLE_BYTES)
  })

  it('a run whose transcript alone is past the bound is not kept, and pushes out nothing', async () => {
    const before = await delegated()
    huge = 'y'.repeat(MAX_CONTINUABLE_BYTES + 1024)
    const alone = await delegated(HUGE)
    huge = undefined
    const after = await delegated()
    expect(sizes.get(alone)).to.be.above(MAX_CONTINUABLE_BYTES)
    expect(h.ctx.subagents.continuable.list().map((info) => info.runId)).to.deep.equal([before, after])
    const error = await rejection(h.ctx.subagents.continue(alone, 'and you?'))
    expect(error.code).to.equal('NOT_FOUND')
    expect(error.message).to.match(/dropped to bound memory/)
  })

  it('a child whose size was lost for room (more children sized at once than the bound) is not kept, not booked at 4 KiB', async () => {
    const reached = deferred()
    const release = deferred()
    holdAnswer = { reached: reached.resolve, release: release.promise }
    const root = h.ctx.agents.create({})
    const run = await h.ctx.subagents.delegate('inproc', request(root, { prompt: `${CHILD}look` }))
    await reached.promise
    // While it waits (its transcript about 1 MiB), as many other children are sized as the bound holds: the service's own map,
    // grown through an observer of it (a child's first prompt), as it would be by that many children of ctx.agents.
    const observer = runObserver(undefined as never, h.ctx.subagents.continuable.sizes)
    for (let i = 0; i < MAX_SIZED_CHILDREN; i++) observer.runStart!({ id: `other-${i}`, parent: root } as never, 'hello')
    release.resolve()
    expect((await run.result).stopReason).to.equal('completed')
    await run.dispose()
    await root.dispose()
    expect(sizes.get(run.id), 'a child holds about 1 MiB').to.be.above(STEPS * 2 * HALF.length)

    const kept = h.ctx.subagents.continuable.book.peek(run.id)
    expect(kept?.size ?? Infinity, 'never kept as smaller than its transcript').to.be.at.least(sizes.get(run.id)!)
    expect(h.ctx.subagents.continuable.list().map((info) => info.runId)).to.not.include(run.id)
    const error = await rejection(h.ctx.subagents.continue(run.id, 'and you?'))
    expect(error.code).to.equal('NOT_FOUND')
    expect(error.message).to.match(/dropped to bound memory/).and.include(`sizes at most ${MAX_SIZED_CHILDREN} running children's`)
      .and.match(/stopped sizing this run's child/)

    // The bound is per child at once: the next child is sized (and kept) again.
    const next = await delegated()
    expect(h.ctx.subagents.continuable.book.peek(next)?.size).to.be.at.least(sizes.get(next)!)
  })

  it('a tool call\'s input is read only so far; a tool result\'s images count', () => {
    let reads = 0
    const counted = <T extends object>(target: T) => new Proxy(target, { get: (of, key) => (reads++, Reflect.get(of, key)) })
    const long = counted(Array.from({ length: 1_000_000 }, () => 'v'))
    const size = callsSize([{ id: 'c', name: 'write', input: { items: long } }])
    expect(reads, 'a million items, a few hundred read').to.be.below(600)
    expect(size, '256 values read, the rest a flat 8 KiB').to.be.within(64 + 256, 64 + 256 * 8 + 8192 + 64)
    const wide = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`k${i}`, 'v'.repeat(100)]))
    expect(callsSize([{ id: 'c', name: 'write', input: wide }]), 'an object: 256 values').to.be.within(256 * 100, 300 * 100 + 8192 + 1024)
    const image = { mimeType: 'image/png', data: 'a'.repeat(5000) }
    expect(imagesSize([image, image])).to.equal(2 * (64 + 5000))
  })
})
