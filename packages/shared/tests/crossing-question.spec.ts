/// <reference types="mocha" />
import { expect } from 'chai'
import { CROSSING_KEY, MAX_QUESTION_LENGTH, MAX_QUESTION_PATH, PENDING_KEY, questionFromMeta, questionMeta } from '@cordis-subagents/shared'

describe('shared: the crossing of a pending question (a parked turn, upwards)', () => {
  const question = {
    id: 'q-1', kind: 'permission' as const, text: 'Delete build/?', path: ['run-a', 'run-b'],
    options: [{ id: 'yes', name: 'Allow' }, { id: 'no', name: 'Reject' }],
  }
  const wrap = (pending: unknown) => ({ [CROSSING_KEY]: { [PENDING_KEY]: pending } })

  it('what a writer puts in _meta, a reader gets back (through JSON, as on the wire)', () => {
    const meta = questionMeta(question)
    expect(meta).to.deep.equal(wrap(question))
    expect(questionFromMeta(JSON.parse(JSON.stringify(meta)))).to.deep.equal(question)
    const { options: _, ...plain } = question
    expect(questionFromMeta(questionMeta({ ...plain, kind: 'ask' }))).to.deep.equal({ ...plain, kind: 'ask' })
  })

  it('a _meta without a question, or with a malformed one, reads as none', () => {
    expect(questionFromMeta(undefined)).to.equal(undefined)
    expect(questionFromMeta({})).to.equal(undefined)
    expect(questionFromMeta({ [CROSSING_KEY]: { work: {} } })).to.equal(undefined)
    const bad: unknown[] = [
      null, 'q', [], { ...question, id: '' }, { ...question, kind: 'wish' }, { ...question, text: 3 }, { ...question, text: ' ' },
      { ...question, path: 'run-a' }, { ...question, path: Array(MAX_QUESTION_PATH + 1).fill('r') }, { ...question, options: 'yes' },
    ]
    for (const value of bad) expect(questionFromMeta(wrap(value)), JSON.stringify(value)?.slice(0, 80)).to.equal(undefined)
  })

  it('a too long text is cut (checkedQuestion), not refused', () => {
    const long = questionFromMeta(wrap({ ...question, text: 'x'.repeat(MAX_QUESTION_LENGTH * 2) }))!
    expect(long.text.length).to.equal(MAX_QUESTION_LENGTH)
  })
})
