/// <reference types="mocha" />
import { expect } from 'chai'
import { answerProblem, checkedQuestion, MAX_ANSWER_LENGTH, MAX_QUESTION_LENGTH, MAX_QUESTION_PATH, questionVia } from '@cordis-subagents/shared'

describe('questions from outside: checkedQuestion, answerProblem, questionVia', () => {
  const good = { id: 'q-1', kind: 'ask', text: 'Which file?', path: ['run-2'] }

  it('copies a well-formed question (options included) and cuts an over-long text with a marker', () => {
    const options = [{ id: 'allow', name: 'Allow once' }]
    const checked = checkedQuestion({ ...good, kind: 'permission', options, extra: 'dropped' })
    expect(checked).to.deep.equal({ ...good, kind: 'permission', options })
    expect((checked as { path: string[] }).path).to.not.equal(good.path)
    const long = checkedQuestion({ ...good, text: 'x'.repeat(MAX_QUESTION_LENGTH + 10) }) as { text: string }
    expect(long.text).to.have.length(MAX_QUESTION_LENGTH)
    expect(long.text.endsWith(`[… the question was cut at ${MAX_QUESTION_LENGTH} characters]`)).to.equal(true)
  })

  it('a text cut before cleaning is marked as cut, never split inside a character, and refused when nothing shows', () => {
    const scan = MAX_QUESTION_LENGTH * 4
    const wellFormed = (text: string) => !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text)
    // Invisible padding up to the scan's last unit, then a question: what a model sees says it was cut.
    const padded = checkedQuestion({ ...good, text: `${'a'.repeat(10)}${'\u200b'.repeat(scan - 11)}😀 Which branch?` }) as { text: string }
    expect(padded.text.startsWith('aaaaaaaaaa')).to.equal(true)
    expect(padded.text.endsWith(`[… the question was cut at ${MAX_QUESTION_LENGTH} characters]`)).to.equal(true)
    expect(wellFormed(padded.text)).to.equal(true)
    // Nothing to show in the part looked at: refused, with the reason, not kept as half a character.
    expect(checkedQuestion({ ...good, text: `${'\u200b'.repeat(scan - 1)}😀 Which branch?` })).to.match(/first 65536 characters hold no text/)
    expect(checkedQuestion({ ...good, text: `${'\u200b'.repeat(scan - 1)}😀 Which branch?` }, { cut: false })).to.be.a('string')
    // A cut at the length bound keeps a pair whole.
    const pairs = checkedQuestion({ ...good, text: '😀'.repeat(MAX_QUESTION_LENGTH) }) as { text: string }
    expect(wellFormed(pairs.text)).to.equal(true)
    expect(pairs.text.length).to.be.at.most(MAX_QUESTION_LENGTH)
  })

  it('says what is wrong with a malformed one', () => {
    expect(checkedQuestion(null)).to.match(/not an object/)
    expect(checkedQuestion({ ...good, id: '' })).to.match(/id must be a string/)
    expect(checkedQuestion({ ...good, kind: 'shout' })).to.match(/kind must be one of ask, permission/)
    expect(checkedQuestion({ ...good, text: '  ' })).to.match(/text must be a non-empty string/)
    expect(checkedQuestion({ ...good, path: Array(MAX_QUESTION_PATH + 1).fill('r') })).to.match(/at most 64 run ids/)
    expect(checkedQuestion({ ...good, path: [1] })).to.match(/path must be an array/)
    expect(checkedQuestion({ ...good, options: [{ id: 'a' }] })).to.match(/options must be an array/)
  })

  it('answerProblem refuses a non-string, blank or over-long answer', () => {
    expect(answerProblem('yes')).to.equal(undefined)
    for (const answer of [undefined, 3, '', ' \n', 'x'.repeat(MAX_ANSWER_LENGTH + 1)]) expect(answerProblem(answer)).to.be.a('string')
  })

  it('questionVia puts the holder\'s run id in front of the path', () => {
    const via = questionVia('run-1', { id: 'q', kind: 'ask', text: 't', path: ['run-2'] })
    expect(via.path).to.deep.equal(['run-1', 'run-2'])
  })
})
