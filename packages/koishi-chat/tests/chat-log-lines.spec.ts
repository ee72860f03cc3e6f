// What ChatRuns logs when the platform refuses a notice it posts (a question that takes no answer any more, an answer
// the run refused): one coded line, the channel and the platform's error cut and scrubbed, whatever the error holds.
import { expect } from 'chai'
import * as entry from '@cordis-subagents/koishi-chat'
import { type ChatSession, ChatRuns } from '../src/chat-runs.js'

/** A 1 MiB platform error: many lines, escape sequences that clear the screen and forge a log line. */
const HUGE_ERROR = `413 Payload Too Large\n${'\u001b[2J\r[ERROR] forged line\n'.repeat(40_000)}`.padEnd(1024 * 1024, 'x')
/** A channel id the platform chose: bidi and control characters, a newline, 100,000 characters. */
const CHANNEL = `room\u202e\u0007\n${'c'.repeat(100_000)}`
/** One line of the shape of its siblings: the code, the run, the channel cut at 64, the error at 300. */
const BOUND = 600

const settle = async () => {
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve))
}

/** A bound run whose question was posted, on a session that refuses every later post with HUGE_ERROR. */
function parkedRun(resume: () => Promise<unknown> = async () => {}) {
  const logs: string[] = []
  const pending: Array<{ runId: string; question: { id: string } }> = []
  const host = { pending: () => pending, resume, cancel: () => {} }
  const runs = new ChatRuns(entry.Config({} as never), host as never, (message) => logs.push(message))
  let posts = 0
  const send: ChatSession['send'] = async () => {
    if (++posts === 1) return ['m1']
    throw new Error(HUGE_ERROR)
  }
  const chat = runs.bind('root-1', { platform: 'mock', userId: 'alice', channelId: CHANNEL, selfId: 'bot', send }, 'task', () => {})
  const info = { runId: 'run-1', parentId: 'root-1', childId: 'child-1' }
  const question = { id: 'question-1', kind: 'ask' as const, text: 'Which region?', path: [] }
  runs.onStart(info as never)
  runs.onPending(info as never, question)
  pending.push({ runId: 'run-1', question })
  return { runs, logs, chat, info, posts: () => posts }
}

function expectOneBoundedLine(logs: string[], runId: string) {
  expect(logs).to.have.length(1)
  const [line] = logs as [string]
  expect(line.length).to.be.below(BOUND)
  expect(line).to.not.match(/[\u0000-\u001f\u007f-\u009f\u202e]/)
  const head = `[NOTICE_NOT_POSTED] a notice of run ${runId} could not be posted to mock:room … [cut at 64 characters] `
  expect(line.startsWith(`${head}(413 Payload Too Large [ERROR] forged line [ERROR] forged line `)).to.equal(true)
  expect(line).to.match(/… \[cut at 300 characters\]\)\.$/)
}

describe('koishi-chat: a refused notice is logged on one bounded line', () => {
  it('a question whose run ended, its note refused with a 1 MiB many-line error', async () => {
    const { runs, logs, chat, info, posts } = parkedRun()
    await settle()
    expect(posts()).to.equal(1)
    runs.onEnd(info as never, { stopReason: 'completed' } as never)
    await settle()
    expect(posts()).to.equal(2)
    expectOneBoundedLine(logs, chat.id)
  })

  it('an answer the run refused, its note refused with a 1 MiB many-line error', async () => {
    const { runs, logs, chat, posts } = parkedRun(async () => { throw new Error('the run refused the answer') })
    await settle()
    const tag = [...runs.questions.ofRun('run-1')][0]!.tag
    const told = runs.answer(runs.questions.get(chat.channel, tag), 'eu-west', 'alice')
    expect(told).to.equal(`Answer to [${tag}] passed on; run ${chat.id} goes on.`)
    await settle()
    expect(posts()).to.equal(2)
    expectOneBoundedLine(logs, chat.id)
  })
})
