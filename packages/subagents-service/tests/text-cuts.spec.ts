/// <reference types="mocha" />
import { expect } from 'chai'
import type { Logger } from 'cordis'
import type { SubagentOutcome, SubagentResult } from '@cordis-subagents/subagents-service'
import { CheckpointJournal } from '../src/durable/journal-checkpoints.js'
import { MAX_LABEL, settleRecord } from '../src/durable/journal-records.js'
import type { CheckpointStore, StoredRunCheckpoint } from '../src/durable/journal-store.js'
import type { JournalledRun } from '../src/run/journal-port.js'
import { endIdle, idleEndNote, type IdleEndPort } from '../src/run/park-expiry.js'
import { ALL, request, setup } from './helpers.js'

// Text from outside (a caller's label, a provider's child id, a provider's diagnostic) that the service cuts before it
// stores or shows it: every cut ends on a character boundary, never in half of a surrogate pair (an emoji), which would
// reach the store's run log as a `\ud83d` escape and a database as U+FFFD.

const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/
const EMOJI = '\u{1F600}'
const WORK = { steps: 0, toolCalls: 0, delegations: 0 }
const silent = { warn() {}, debug() {}, info() {} } as unknown as Logger

function wellFormed(text: string | undefined, what: string): string {
  expect(text, what).to.be.a('string')
  expect(LONE.test(text!), `${what} holds half a surrogate pair: ${JSON.stringify(text!.slice(-8))}`).to.equal(false)
  return text!
}

function outcome(fields: Partial<SubagentOutcome> = {}): SubagentOutcome {
  return { stopReason: 'completed', output: 'done', work: { ...WORK }, ...fields } as SubagentOutcome
}

/** A store that keeps every record it is handed (`save` only: the journal writes in order). */
function recordingStore(maxTextBytes = 1 << 20) {
  const saved: StoredRunCheckpoint[] = []
  const store = {
    host: 'h1',
    limits: { maxTextBytes },
    save: async (record: StoredRunCheckpoint) => { saved.push(record); return record },
  } as unknown as CheckpointStore
  return { store, saved }
}

describe('cuts of outside text in the service end on a character boundary', () => {
  it('a background run\'s stored label (handle and label, cut to MAX_LABEL) keeps whole characters; a long one is cut, not refused', () => {
    const { store } = recordingStore()
    for (let at = MAX_LABEL - 8; at < MAX_LABEL; at++) {
      // `bg-1 ` then the label: the emoji straddles the bound at one of these offsets.
      const label = 'a'.repeat(at - 'bg-1 '.length) + EMOJI + ' and more'
      const record = settleRecord(store, 'run-1', outcome(), { handle: 'bg-1', label })
      const stored = wellFormed(record.label, `the label cut at ${at}`)
      expect(stored.length).to.be.at.most(MAX_LABEL).and.at.least(MAX_LABEL - 1)
      expect(`bg-1 ${label}`.startsWith(stored)).to.equal(true)
    }
    expect(settleRecord(store, 'run-1', outcome(), { handle: 'bg-1', label: `short ${EMOJI}` }).label).to.equal(`bg-1 short ${EMOJI}`)
  })

  it('a stored result cut to maxTextBytes keeps a U+FFFD the output really ends its kept part with', () => {
    const { store } = recordingStore(10)
    // 7 bytes, then U+FFFD (3 bytes): exactly the bound. The old cut decoded the bytes and stripped every trailing U+FFFD.
    const record = settleRecord(store, 'run-1', outcome({ output: `${'a'.repeat(7)}\uFFFD${'b'.repeat(50)}` }))
    expect(record.result).to.equal(`${'a'.repeat(7)}\uFFFD`)
    expect(settleRecord(store, 'run-1', outcome({ output: `${'a'.repeat(8)}${EMOJI}bbb` })).result).to.equal('a'.repeat(8))
  })

  it('a run\'s start record: its label and child agent id, cut to MAX_LABEL, keep whole characters', async () => {
    const { store, saved } = recordingStore()
    const journal = new CheckpointJournal({ lifecycle: { isActive: false } } as never, () => store, silent)
    const long = 'a'.repeat(MAX_LABEL - 1) + EMOJI + ' tail'
    const run = {
      id: 'run-1',
      info: { runId: 'run-1', provider: 'fake', parentId: 'root', depth: 1, startedAt: 0, label: long, childId: long },
      checkpoint: () => undefined,
    } as unknown as JournalledRun
    journal.started(run)
    await journal.flush()
    expect(saved).to.have.length(1)
    expect(wellFormed(saved[0].label, 'the stored label')).to.equal('a'.repeat(MAX_LABEL - 1))
    expect(wellFormed(saved[0].agent, 'the stored agent id')).to.equal('a'.repeat(MAX_LABEL - 1))
  })

  it('the note a parent gets when its parked child ended idle quotes a diagnostic cut on a character boundary', () => {
    const run: IdleEndPort & { info: { label: string } } = {
      id: 'run-1', state: 'parked', open: true, info: { label: 'review' }, follow: (call) => { call() },
    }
    endIdle(run, silent, { stopReason: 'timeout', output: '' } as SubagentResult)
    const note = idleEndNote(run, outcome({ stopReason: 'timeout', diagnostic: `${'d'.repeat(999)}${EMOJI} and more` }))
    expect(wellFormed(note, 'the idle-end note').endsWith(` ${'d'.repeat(999)}`)).to.equal(true)
  })
})

describe('a provider\'s run origin in the run info', () => {
  it('is cut to 32 units on a character boundary', async () => {
    const h = await setup()
    try {
      h.ctx.subagents.register({
        name: 'far', inheritsParentContext: false, capabilities: ALL,
        start: async () => ({
          id: 'far-1', origin: `${'o'.repeat(31)}${EMOJI}elsewhere`, result: Promise.resolve({ stopReason: 'completed', output: 'ok' }),
          cancel: () => {}, dispose: async () => {},
        }),
      })
      const run = await h.ctx.subagents.delegate('far', request(h.root))
      expect(wellFormed(run.info.origin, 'run.info.origin')).to.equal('o'.repeat(31))
      await run.result
      await run.dispose()
    } finally {
      await h.stop()
    }
  })
})
