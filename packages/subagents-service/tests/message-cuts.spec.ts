/// <reference types="mocha" />
import { expect } from 'chai'
import type { Logger } from 'cordis'
import type { PendingQuestion } from '@cordis-subagents/shared'
import type { SubagentOutcome, SubagentResult } from '@cordis-subagents/subagents-service'
import { describeHolders } from '../src/admission/slot-holders.js'
import { Answers } from '../src/run/answers.js'
import { endIdle, idleEndNote, type IdleEndPort } from '../src/run/park-expiry.js'
import { FakeProvider, type Harness, rejection, request, setup } from './helpers.js'

// Messages that quote outside text (a run id a caller gave, a run's label, a child's question) cut it to a head: the
// cut ends on a character boundary, so the model never reads half an emoji as a literal `\ud83d` escape.

const EMOJI = '\u{1F600}'
const ESCAPED = /\\ud[89a-f][0-9a-f]{2}/i
const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/
const silent = { warn() {}, debug() {}, info() {} } as unknown as Logger

/** `x` then emojis, past `cut` UTF-16 units: a cut at `cut` (even) falls inside an emoji. */
const emojis = (cut: number) => `x${EMOJI.repeat(cut)}`
/** The head a cut at `cut` keeps: `x` and the whole emojis before it. */
const head = (cut: number) => `x${EMOJI.repeat((cut - 2) / 2)}`

/** The message quotes `text`'s head (as JSON) and holds no half of a surrogate pair, raw or escaped. */
function quotesHead(message: string, cut: number, what: string): void {
  expect(ESCAPED.test(message), `${what} holds an escaped half emoji: ${message}`).to.equal(false)
  expect(LONE.test(message), `${what} holds half an emoji`).to.equal(false)
  expect(message, `${what} names the text's head`).to.include(JSON.stringify(head(cut)))
}

describe('messages that quote outside text cut it on a character boundary', () => {
  let h: Harness
  let fake: FakeProvider

  beforeEach(async () => {
    h = await setup()
    fake = new FakeProvider('fake')
    fake.parkable = true
    h.ctx.subagents.register(fake)
  })
  afterEach(async () => { await h.stop() })

  it('an unknown run id (result, resume, continue) and a run dropped from the continuable book', async () => {
    const runId = emojis(100)
    const result = await rejection(h.ctx.subagents.result(runId))
    expect(result.code).to.equal('NOT_FOUND')
    quotesHead(result.message, 100, 'result()')
    const resume = await rejection(h.ctx.subagents.resume(runId, 'yes'))
    expect(resume.code).to.equal('NOT_FOUND')
    quotesHead(resume.message, 100, 'resume()')
    const continued = await rejection(h.ctx.subagents.continue(runId, 'more'))
    expect(continued.code).to.equal('NOT_FOUND')
    quotesHead(continued.message, 100, 'continue()')
    h.ctx.subagents.continuable.dropped.set(runId, { parentId: h.root.id })
    const dropped = await rejection(h.ctx.subagents.continue(runId, 'more'))
    expect(dropped.message).to.match(/dropped to bound memory/)
    quotesHead(dropped.message, 100, 'continue() of a dropped run')
    h.ctx.subagents.continuable.dropped.set(runId, { parentId: h.root.id, unsized: true })
    const unsized = await rejection(h.ctx.subagents.continue(runId, 'more'))
    expect(unsized.message).to.match(/stopped sizing this run's child/)
    quotesHead(unsized.message, 100, 'continue() of a run whose child was not sized')
  })

  it('a parked run cancelled: its diagnostic quotes the question', async () => {
    const run = await h.ctx.subagents.delegate('fake', request(h.root))
    fake.last.ask(emojis(200))
    expect((await run.result).stopReason).to.equal('pending')
    run.cancel('no longer needed')
    const final = await run.current()
    expect(final.stopReason).to.equal('aborted')
    quotesHead(final.diagnostic!, 200, 'the cancelled run\'s diagnostic')
    await run.dispose()
  })

  it('a second answer to a question answered already quotes it', () => {
    const answers = new Answers()
    const question: PendingQuestion = { id: 'q-1', kind: 'ask', text: emojis(200), path: [] } as PendingQuestion
    answers.took(question, 'yes', new Promise<SubagentOutcome>(() => {}))
    const refusal = answers.refusal('run-1', 'running')
    expect(refusal.code).to.equal('ALREADY_ANSWERED')
    quotesHead(refusal.message, 200, 'ALREADY_ANSWERED')
  })

  it('the note of a parked child that ended idle quotes its label', () => {
    const run: IdleEndPort & { info: { label: string } } = {
      id: 'run-1', state: 'parked', open: true, info: { label: emojis(120) }, follow: (call) => { call() },
    }
    endIdle(run, silent, { stopReason: 'timeout', output: '' } as SubagentResult)
    const note = idleEndNote(run, { stopReason: 'timeout', output: '', work: { steps: 0, toolCalls: 0, delegations: 0 } } as SubagentOutcome)
    quotesHead(note!, 120, 'the idle-end note')
  })

  it('the slot holders a refusal names quote their labels', () => {
    const described = describeHolders([{ id: 'run-1', state: 'running', info: { label: emojis(60) } }])
    quotesHead(described, 60, 'the slot holders')
    expect(described).to.match(/^1 running \(run-1 "/)
  })
})
