// The entry as a loader imports it (the plugin shape), and the text rules between a tree and a chat.
import { expect } from 'chai'
import * as entry from '@cordis-subagents/koishi-chat'
import { chatText, optionAnswer, questionPost, replyText, shown } from '../src/chat-text.js'
import { QuestionBook } from '../src/questions.js'

describe('koishi-chat: plugin shape and chat text', () => {
  it('is a plain Koishi plugin: name, Config (defaults bounded), inject, apply', () => {
    expect(entry.name).to.equal('cordis-subagents-koishi-chat')
    expect(entry.inject).to.deep.equal({ required: ['agents', 'subagents'], optional: ['database'] })
    expect(entry.apply).to.be.a('function')
    expect(entry.Config({} as never)).to.deep.include({ answerBy: 'starter', adminAuthority: 3, maxRuns: 16, maxRunsPerChannel: 4, maxRunsPerUser: 2, maxAnswerLength: 4000, timeout: 3_600_000 })
    expect(() => entry.Config({ answerBy: 'everyone' } as never)).to.throw()
  })

  it('escapes element markup, so a question or an answer is never sent as a mention', () => {
    expect(chatText('<at type="all"/> & <b>')).to.equal('&lt;at type="all"/&gt; &amp; &lt;b&gt;')
  })

  it('posts a question bounded, redacted, with its options numbered', () => {
    const text = questionPost('q9', 'r2', {
      id: 'q-1', kind: 'permission', text: `Run it? token=abcdef123456 ${'z'.repeat(3000)}`, path: ['run-1', 'run-2'],
      options: [{ id: 'allow', name: 'Allow once' }, { id: 'deny', name: 'Deny\u001b[2J' }],
    }, 100, 'Reply to answer.')
    expect(text.split('\n')[0]).to.equal('[q9] Question from subagent run-1 &gt; run-2 of run r2 (permission):')
    expect(text).to.not.include('abcdef123456')
    expect(text).to.include('[cut at 100 characters]')
    expect(text).to.include('1. Allow once\n2. Deny\nReply to answer.')
  })

  it('reads a reply as plain text: mentions by name, the bot\'s own mention dropped, capped before scrubbing', () => {
    const el = (type: string, attrs: Record<string, unknown>, children: any[] = []) => ({ type, attrs, children })
    const elements = [el('at', { id: '514' }), el('text', { content: ' ' }), el('at', { id: 'u1', name: 'bob' }), el('text', { content: ' go\u0007\u202e' }), el('img', { src: 'x' })]
    expect(replyText(elements, 100, '514')).to.equal('@bob go')
    // A huge text is read only up to the cap (+1, so the caller can tell it was over).
    expect(replyText([el('text', { content: 'x'.repeat(100_000) })], 10, '514')).to.have.length(11)
    // A cut never leaves half a token (it could be the head of a secret).
    expect(shown('ab cdefghijklmnop', 10)).to.equal('ab … [cut at 10 characters]')
  })

  it('a number picks an offered option by its id; any other answer is passed as written', () => {
    const question = { id: 'q-1', kind: 'permission' as const, text: 'Run it?', path: [], options: [{ id: 'allow', name: 'Allow' }, { id: 'deny', name: 'Deny' }] }
    expect(optionAnswer(question, '2')).to.equal('deny')
    expect(optionAnswer(question, '3')).to.equal('3')
    expect(optionAnswer(question, 'allow it')).to.equal('allow it')
    expect(optionAnswer({ ...question, options: undefined }, '1')).to.equal('1')
  })

  it('keeps one open entry per question and remembers what happened to a closed tag (bounded)', () => {
    const book = new QuestionBook<{ id: string, channel: string }>()
    const owner = { id: 'r1', channel: 'mock:room' }
    const question = { id: 'q-a', kind: 'ask' as const, text: 'Which?', path: [] }
    const entry = book.add(owner, question, 'run-1')!
    expect(book.add(owner, question, 'run-0')).to.equal(undefined)
    expect(book.quotedTag('mock:room', { content: `[${entry.tag}] Question …` })).to.equal(entry.tag)
    book.close('q-a', 'it was answered by alice')
    expect(() => book.get('mock:room', entry.tag)).to.throw(`[${entry.tag}] takes no answer any more: it was answered by alice.`)
    expect(book.add(owner, question, 'run-1')).to.equal(undefined)
    for (let i = 0; i < 300; i++) book.close(book.add(owner, { ...question, id: `q-${i}` }, 'run-1')!.question.id, 'done')
    expect(() => book.get('mock:room', entry.tag)).to.throw(/No question/)
  })
})
