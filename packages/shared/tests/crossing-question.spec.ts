/// <reference types="mocha" />
import { expect } from 'chai'
import { CROSSING_KEY, foreignQuestion, MAX_QUESTION_LENGTH, MAX_QUESTION_PATH, QUESTION_KEY, questionFromMeta, questionMeta } from '@cordis-subagents/shared'

describe('shared: the crossing of a pending question (a parked turn, upwards)', () => {
  const question = {
    id: 'q-1', kind: 'permission' as const, text: 'Delete build/?', path: ['run-a', 'run-b'],
    options: [{ id: 'yes', name: 'Allow' }, { id: 'no', name: 'Reject' }],
  }
  const wrap = (pending: unknown) => ({ [CROSSING_KEY]: { [QUESTION_KEY]: pending } })

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

  it('foreignQuestion (a peer that is not ours) strips control characters, cuts a long text with a marker, and falls back when it says nothing', () => {
    const base = { id: 'q-3', kind: 'input-required' as const, path: [] }
    expect(foreignQuestion(base, '\u001b[2J Which\u0007 file? ', 'fallback').text).to.equal('Which file?')
    expect(foreignQuestion(base, '   ', 'fallback').text).to.equal('fallback')
    const long = foreignQuestion(base, 'y'.repeat(MAX_QUESTION_LENGTH * 3), 'fallback').text
    expect(long).to.have.length(MAX_QUESTION_LENGTH)
    expect(long).to.match(/\[… the question was cut at 16384 characters\]$/)
  })
})
