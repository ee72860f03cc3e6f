/// <reference types="mocha" />
import { expect } from 'chai'
import {
  checkedQuestion, CROSSING_KEY, MAX_QUESTION_LENGTH, MAX_QUESTION_OPTIONS, MAX_QUESTION_PATH, PENDING_KEY, questionFromMeta, questionMeta,
} from '@cordis-subagents/shared'

describe('shared: the crossing of a pending question (a parked turn, upwards)', () => {
  const question = {
    id: 'q-1', kind: 'permission' as const, text: 'Delete build/?', path: ['run-a', 'run-b'],
    options: [{ id: 'yes', name: 'Allow' }, { id: 'no', name: 'Reject' }],
  }

  it('what a writer puts in _meta, a reader gets back (through JSON, as on the wire)', () => {
    const meta = questionMeta(question)
    expect(Object.keys(meta)).to.deep.equal([CROSSING_KEY])
    expect(Object.keys(meta[CROSSING_KEY] as object)).to.deep.equal([PENDING_KEY])
    expect(questionFromMeta(JSON.parse(JSON.stringify(meta)))).to.deep.equal(question)
    const { options: _, ...plain } = question
    expect(questionFromMeta(questionMeta({ ...plain, kind: 'ask' }))).to.deep.equal({ ...plain, kind: 'ask' })
  })

  it('a _meta without a question, or with a malformed one, reads as none', () => {
    expect(questionFromMeta(undefined)).to.equal(undefined)
    expect(questionFromMeta({})).to.equal(undefined)
    expect(questionFromMeta({ [CROSSING_KEY]: { work: {} } })).to.equal(undefined)
    const bad: unknown[] = [
      null, 'q', [], { ...question, id: '' }, { ...question, id: 7 }, { ...question, kind: 'wish' }, { ...question, text: 3 },
      { ...question, path: 'run-a' }, { ...question, path: [''] }, { ...question, path: Array(MAX_QUESTION_PATH + 1).fill('r') },
      { ...question, options: 'yes' }, { ...question, id: 'x'.repeat(257) },
    ]
    for (const value of bad) expect(checkedQuestion(value), JSON.stringify(value)?.slice(0, 80)).to.equal(undefined)
  })

  it('caps the text, the options and each option name; drops malformed options', () => {
    const long = checkedQuestion({ ...question, text: 'x'.repeat(MAX_QUESTION_LENGTH * 2) })!
    expect(long.text.length).to.equal(MAX_QUESTION_LENGTH)
    expect(long.text.endsWith('[question cut]')).to.equal(true)
    const many = checkedQuestion({
      ...question,
      options: [{ id: 'bad' }, { id: '', name: 'empty' }, ...Array.from({ length: 200 }, (_, i) => ({ id: `o${i}`, name: 'n'.repeat(1000) }))],
    })!
    expect(many.options!.length).to.equal(MAX_QUESTION_OPTIONS - 2)
    expect(many.options![0]).to.deep.equal({ id: 'o0', name: 'n'.repeat(256) })
  })
})
