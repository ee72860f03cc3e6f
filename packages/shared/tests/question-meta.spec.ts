/// <reference types="mocha" />
// The question's wire shape across a process boundary: written by a serving host, read back by a
// parent; what is read is untrusted.
import { expect } from 'chai'
import {
  foreignQuestion, MAX_QUESTION_LENGTH, MAX_QUESTION_OPTIONS, type PendingQuestion, questionFromMeta, questionMeta,
} from '@cordis-subagents/shared'

describe('shared: question metadata', () => {
  it('round-trips id, kind and options', () => {
    const question: PendingQuestion = { id: 'q-1', kind: 'permission', text: 'May I?', path: ['run-1'], options: [{ id: 'yes', name: 'Allow' }] }
    const meta = questionMeta(question)
    expect(meta).to.deep.equal({ cordisSubagents: { question: { id: 'q-1', kind: 'permission', options: [{ id: 'yes', name: 'Allow' }] } } })
    expect(questionFromMeta(JSON.parse(JSON.stringify(meta)))).to.deep.equal({ id: 'q-1', kind: 'permission', options: [{ id: 'yes', name: 'Allow' }] })
  })

  it('drops what is malformed, field by field, and caps the options', () => {
    expect(questionFromMeta(undefined)).to.deep.equal({})
    expect(questionFromMeta({ cordisSubagents: 'x' })).to.deep.equal({})
    expect(questionFromMeta({ cordisSubagents: { question: [] } })).to.deep.equal({})
    expect(questionFromMeta({ cordisSubagents: { question: { id: 'has space', kind: 'nope', options: 'a' } } })).to.deep.equal({})
    const options = [{ id: 'ok', name: 'fine\u001b[31m' }, { id: '', name: 'empty' }, { id: 'x'.repeat(201), name: 'long' }, null, { id: 7, name: 'n' }]
    expect(questionFromMeta({ cordisSubagents: { question: { id: 'q-2', options } } })).to.deep.equal({ id: 'q-2', options: [{ id: 'ok', name: 'fine' }] })
    const many = Array.from({ length: 100 }, (_, i) => ({ id: `o${i}`, name: `O${i}` }))
    expect(questionFromMeta({ cordisSubagents: { question: { options: many } } }).options).to.have.length(MAX_QUESTION_OPTIONS)
  })

  it('foreignQuestion strips control characters, cuts a long text with a marker, and falls back when it says nothing', () => {
    const base = { id: 'q-3', kind: 'input-required' as const, path: [] }
    expect(foreignQuestion(base, '\u001b[2J Which\u0007 file? ', 'fallback').text).to.equal('Which file?')
    expect(foreignQuestion(base, '   ', 'fallback').text).to.equal('fallback')
    const long = foreignQuestion(base, 'y'.repeat(MAX_QUESTION_LENGTH * 3), 'fallback').text
    expect(long).to.have.length(MAX_QUESTION_LENGTH)
    expect(long).to.match(/\[question truncated\]$/)
  })
})
