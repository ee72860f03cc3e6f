// koishi-chat in a Koishi App (tests/support/koishi-mock.ts) with a `subagents` stand-in whose verbs a spec
// plays: an answer its run refuses, a reply to a message that is not ours, a closed question named from another
// channel, the length of a final answer, and `runAuthority` without a database.
import { expect } from 'chai'
import { eventually } from '@cordis-subagents/test-support'
import type * as entry from '@cordis-subagents/koishi-chat'
import type { ChatSession } from '../src/chat-runs.js'
import { QuestionBook } from '../src/questions.js'
import { type MockApp, mockApp, type MockHost, type Observed } from './support/koishi-mock.js'

const PERMISSION = {
  id: 'question-1', kind: 'permission', text: 'Delete build/?', path: [],
  options: [{ id: 'allow_once', name: 'Allow' }, { id: 'allow_always', name: 'Always allow' }, { id: 'reject_once', name: 'Reject' }],
}

interface Harness { app: MockApp, observed: Observed, sent: string[], close(): Promise<void> }

async function harness(config: Partial<entry.Config> = {}, host: Partial<MockHost> = {}): Promise<Harness> {
  const { app, observed, close } = await mockApp(config, host)
  const sent: string[] = []
  app.on('before-send', (session) => { sent.push(session.elements.join('')) })
  await app.mock.initUser('alice', 1)
  await app.mock.initUser('bob', 1)
  return { app, observed, sent, close }
}

/** Binds a root agent `root-<channel>` to alice's session in `channel` (grabbed from a command), as an integration does. */
async function bindIn(h: Harness, channel: string): Promise<string> {
  let grabbed: unknown
  h.app.command('grab').action(({ session }) => {
    grabbed = session
    return 'ok'
  })
  await h.app.mock.client('alice', channel).receive('grab')
  return h.app.subagentChat.bind({ id: `root-${channel}` }, grabbed as ChatSession).id
}

/** A child of the root in `channel` parks on `question`; resolves with the tag it was posted under. */
async function ask(h: Harness, channel: string, n: number, question: Record<string, unknown>): Promise<string> {
  const info = { runId: `run-${n}`, parentId: `root-${channel}`, childId: `child-${n}` }
  h.observed['subagent/start']!(info)
  const from = h.sent.length
  h.observed['subagent/pending']!(info, question)
  const posted = await eventually(async () => h.sent.slice(from).find((text) => text.includes(String(question.text))), 'the question posted')
  return /^\[(q\d+)\]/.exec(posted)![1]!
}

/** A host whose runs `run-<n>` are parked on `question-<n>` until answered; the answers it took, in order. */
function parkedHost(): { host: Partial<MockHost>, answers: string[] } {
  const answers: string[] = []
  const answered = new Set<string>()
  const host: Partial<MockHost> = {
    pending: () => [1, 2, 3].filter((n) => !answered.has(`run-${n}`)).map((n) => ({ runId: `run-${n}`, question: { id: `question-${n}` } })),
    resume: async (runId, answer) => {
      answered.add(runId)
      answers.push(`${runId}: ${answer}`)
      return { stopReason: 'completed', text: 'done' }
    },
  }
  return { host, answers }
}

describe('koishi-chat: answers the run refuses, replies and tags, closed notes, message bounds, runAuthority', () => {
  let h: Harness | undefined
  afterEach(async () => {
    await h?.close()
    h = undefined
  })

  it('an answer the provider refuses (pending again on the same question) opens the question again, with the reason', async () => {
    const answers: string[] = []
    let parked = true
    h = await harness({}, {
      pending: () => parked ? [{ runId: 'run-1', question: PERMISSION }] : [],
      resume: async (_runId, answer) => {
        answers.push(answer)
        if (answer !== 'allow_once') return { stopReason: 'pending', question: PERMISSION, diagnostic: `[INVALID_REQUEST] "${answer}" names none of the options.` }
        parked = false
        return { stopReason: 'completed', text: 'done' }
      },
    })
    const run = await bindIn(h, 'room')
    const tag = await ask(h, 'room', 1, PERMISSION)
    const alice = h.app.mock.client('alice', 'room')
    expect(await alice.receive('sure')).to.deep.equal([`Answer to [${tag}] passed on; run ${run} goes on.`])
    const again = await eventually(async () => h!.sent.find((text) => text.startsWith(`Your answer to [${tag}] was not taken`)), 'the refusal posted')
    expect(again).to.equal(`Your answer to [${tag}] was not taken: [INVALID_REQUEST] "sure" names none of the options. `
      + `It waits again: answer with an option's number.\n[${tag}] Question from subagent run-1 of run ${run} (permission):\nDelete build/?\n`
      + `1. Allow\n2. Always allow\n3. Reject\nReply to this message to answer (a number picks an option), or: subagents.answer ${tag} &lt;answer&gt;`)
    expect((await alice.receive('subagents')).join('\n')).to.include(`${run} parked`).and.include(`[${tag}] Delete build/?`)
    // The next reply answers it: option 1 by its number.
    expect(await alice.receive('1')).to.deep.equal([`Answer to [${tag}] passed on; run ${run} goes on.`])
    expect(answers).to.deep.equal(['sure', 'allow_once'])
  })

  it('tags questions uniquely across books (a plugin reload), from a random start per process', () => {
    const owner = { id: 'r1', channel: 'mock:room' }
    const question = { id: 'question-1', kind: 'ask' as const, text: 'Delete the staging DB?', path: [] }
    const before = new QuestionBook().add(owner, question, 'run-1')!.tag
    const after = new QuestionBook().add(owner, { ...question, text: 'Delete the PRODUCTION DB?' }, 'run-2')!.tag
    expect(before).to.match(/^q\d{4,}$/)
    expect(after).to.not.equal(before)
  })

  it('a quote whose message id is not one of ours answers nothing, whatever [qN] its text names', async () => {
    const { host, answers } = parkedHost()
    h = await harness({}, host)
    const bot = h.app.bots[0]!
    const ids = new Map<string, string>()
    const send = bot.sendMessage.bind(bot)
    // An adapter that reports the ids of the messages it sent.
    bot.sendMessage = async (...args: unknown[]) => {
      await send(...args)
      ids.set(String(args[1]), `m-${ids.size + 1}`)
      return [`m-${ids.size}`]
    }
    const run = await bindIn(h, 'room')
    const tag = await ask(h, 'room', 1, { id: 'question-1', kind: 'ask', text: 'Delete the PRODUCTION DB?', path: [] })
    const alice = h.app.mock.client('alice', 'room')
    // A reply to an older message (another process's, or one posted before a reload) whose text names the same tag.
    expect(await alice.receive(`<quote id="old-msg-17">[${tag}] Question: Delete the staging DB?</quote>yes`)).to.deep.equal([])
    expect(answers).to.deep.equal([])
    const question = [...ids].find(([text]) => text.includes('PRODUCTION'))![1]
    expect(await alice.receive(`<quote id="${question}">whatever</quote>no`)).to.deep.equal([`Answer to [${tag}] passed on; run ${run} goes on.`])
    expect(answers).to.deep.equal(['run-1: no'])
  })

  it('what happened to a closed question is told in its channel only; another channel is told it knows no such question', async () => {
    const { host, answers } = parkedHost()
    h = await harness({}, host)
    await bindIn(h, 'private-hr')
    const tag = await ask(h, 'private-hr', 1, { id: 'question-1', kind: 'ask', text: 'Which salary band for Carol?', path: [] })
    const bob = h.app.mock.client('bob', 'general')
    const unknown = `No question [${tag}] waits in this channel (\`subagents\` lists them).`
    expect(await bob.receive(`subagents.answer ${tag} x`)).to.deep.equal([unknown])
    await h.app.mock.client('alice', 'private-hr').receive('band 7')
    expect(answers).to.deep.equal(['run-1: band 7'])
    expect(await bob.receive(`subagents.answer ${tag} x`)).to.deep.equal([unknown])
    expect(await bob.receive(`<quote>[${tag}]</quote>hi`)).to.deep.equal([unknown])
    const told = `[${tag}] takes no answer any more: it was answered by alice.`
    expect(await h.app.mock.client('alice', 'private-hr').receive(`subagents.answer ${tag} x`)).to.deep.equal([told])
  })

  it('refuses subagents.run when runAuthority is above 0 and no database is loaded (Koishi would check no authority)', async () => {
    const { app, close } = await mockApp({ runAuthority: 4 }, {}, { database: false })
    h = { app, observed: {}, sent: [], close }
    expect(await app.mock.client('stranger', 'room').receive('subagents.run anything')).to.deep.equal([
      'subagents.run needs a database to check runAuthority (4); none is loaded, so no run is started. '
      + 'Load a database plugin, or set runAuthority: 0 to let anyone start runs.',
    ])
  })
})
