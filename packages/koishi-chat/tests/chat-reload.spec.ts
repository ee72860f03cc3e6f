// koishi-chat reloaded, unloaded or given a new config while its runs are live (tests/support/koishi-mock.ts, with an
// `agents` stand-in whose root agents never finish a turn): every live run's channel is told it ended, a later answer
// to its question is told why, a bound run's live delegations are cancelled, and a change of a live option keeps the runs.
import { expect } from 'chai'
import { eventually } from '@cordis-subagents/test-support'
import * as chat from '@cordis-subagents/koishi-chat'
import type { ChatSession } from '../src/chat-runs.js'
import { type MockApp, mockApp, type MockFork, type MockHost, type Observed } from './support/koishi-mock.js'

const STOPPED = 'cancelled (the subagents chat plugin was reloaded or unloaded)'

interface FakeAgent { id: string, disposed: boolean }

/** An `agents` stand-in: each root agent's turn goes on until it is disposed (then it rejects, as a disposed agent's does). */
function fakeAgents() {
  const made: FakeAgent[] = []
  const agents = {
    create: () => {
      let fail!: (error: Error) => void
      const turn = new Promise<never>((_resolve, reject) => { fail = reject })
      turn.catch(() => {})
      const agent = {
        id: `root-${made.length + 1}`, disposed: false,
        run: () => turn,
        nextResult: () => turn,
        resume: () => turn,
        dispose: async () => {
          agent.disposed = true
          fail(new Error(`Agent ${agent.id} has been disposed; create a new agent.`))
        },
      }
      made.push(agent)
      return agent
    },
  }
  return { agents, made }
}

/** A host whose delegation runs park until answered or cancelled: what it was asked to do, in order. */
function host(): { host: Partial<MockHost>, calls: string[] } {
  const calls: string[] = []
  const over = new Set<string>()
  return {
    calls,
    host: {
      pending: () => [1, 2].filter((n) => !over.has(`run-${n}`)).map((n) => ({ runId: `run-${n}`, question: { id: `question-${n}` } })),
      resume: async (runId, answer) => {
        over.add(runId)
        calls.push(`resume ${runId}: ${answer}`)
        return { stopReason: 'completed', text: 'done' }
      },
      cancel: (runId, reason) => {
        over.add(runId)
        calls.push(`cancel ${runId}: ${reason}`)
      },
    },
  }
}

interface Harness {
  app: MockApp
  observed: Observed
  fork: MockFork
  sent: string[]
  made: FakeAgent[]
  calls: string[]
  close(): Promise<void>
}

async function harness(config: Partial<chat.Config> = {}): Promise<Harness> {
  const { agents, made } = fakeAgents()
  const { host: stand, calls } = host()
  const { app, observed, fork, close } = await mockApp(config, stand, { agents })
  const sent: string[] = []
  app.on('before-send', (session) => { sent.push(session.elements.join('')) })
  await app.mock.initUser('alice', 1)
  return { app, observed, fork, sent, made, calls, close }
}

/** Child `run-<n>` of `parentId` parks on a question; resolves with the tag it was posted under. */
async function ask(h: Harness, parentId: string, n: number): Promise<string> {
  const info = { runId: `run-${n}`, parentId, childId: `child-${n}` }
  h.observed['subagent/start']!(info)
  const from = h.sent.length
  h.observed['subagent/pending']!(info, { id: `question-${n}`, kind: 'ask', text: `Which region, ${n}?`, path: [] })
  const posted = await eventually(async () => h.sent.slice(from).find((text) => text.includes(`Which region, ${n}?`)), 'the question posted')
  return /^\[(q\d+)\]/.exec(posted)![1]!
}

/** What alice is told in `channel` (a client of its own: a mock client also returns what was posted through its sessions since). */
const says = (h: Harness, text: string, channel = 'room') => h.app.mock.client('alice', channel).receive(text)

/** The run id in `Run rN started: <task>`, the one reply to `subagents.run <task>`. */
function started(replies: string[], task: string): string {
  expect(replies).to.have.length(1)
  const id = new RegExp(`^Run (r\\d+) started: ${task}$`).exec(replies[0]!)?.[1]
  expect(id, replies[0]).to.be.a('string')
  return id!
}

const ended = (h: Harness, run: string) => eventually(async () => h.sent.find((text) => text.startsWith(`Run ${run} ended`)), `run ${run}'s end posted`)

describe('koishi-chat reloaded, unloaded or reconfigured with live runs', () => {
  let h: Harness | undefined
  afterEach(async () => {
    await h?.close()
    h = undefined
  })

  it('a reload posts the end of a run parked on a question; a later answer to it is told why, and nothing is resumed', async () => {
    h = await harness()
    const run = started(await says(h, 'subagents.run Release v2'), 'Release v2')
    const tag = await ask(h, h.made[0]!.id, 1)
    h.fork.dispose()
    h.fork = h.app.plugin(chat, chat.Config({} as never))
    expect(await ended(h, run)).to.equal(`Run ${run} ended: ${STOPPED}.`)
    expect(h.made[0]!.disposed).to.equal(true)
    const told = `[${tag}] takes no answer any more: run ${run} ended ${STOPPED}.`
    expect(await says(h, `subagents.answer ${tag} eu-west`)).to.deep.equal([told])
    expect(await says(h, `<quote id="0">[${tag}] Question</quote>eu-west`)).to.deep.equal([told])
    // Another channel still knows no such question.
    expect(await says(h, `subagents.answer ${tag} x`, 'hall')).to.deep.equal([`No question [${tag}] waits in this channel (\`subagents\` lists them).`])
    expect(h.calls).to.deep.equal([])
  })

  it('an unload posts the end of a run whose child is still working (no question yet)', async () => {
    h = await harness()
    const run = started(await says(h, 'subagents.run slow'), 'slow')
    h.observed['subagent/start']!({ runId: 'run-1', parentId: h.made[0]!.id, childId: 'child-1' })
    h.fork.dispose()
    expect(await ended(h, run)).to.equal(`Run ${run} ended: ${STOPPED}.`)
    expect(h.made[0]!.disposed).to.equal(true)
    expect(h.sent.filter((text) => text.startsWith(`Run ${run} ended`))).to.have.length(1)
  })

  it('an unload cancels a bound run\'s live delegations, posts its end and ends the binding (dispose() after it is harmless)', async () => {
    h = await harness()
    let grabbed: unknown
    h.app.command('grab').action(({ session }) => {
      grabbed = session
      return 'ok'
    })
    await h.app.mock.client('alice', 'room').receive('grab')
    const binding = h.app.subagentChat.bind({ id: 'root-bound' }, grabbed as ChatSession, { task: 'integration' })
    const tag = await ask(h, 'root-bound', 1)
    h.observed['subagent/start']!({ runId: 'run-2', parentId: 'root-bound' })
    h.fork.dispose()
    expect(h.calls).to.deep.equal(['cancel run-1: the subagents chat plugin was reloaded or unloaded', 'cancel run-2: the subagents chat plugin was reloaded or unloaded'])
    expect(await ended(h, binding.id)).to.equal(`Run ${binding.id} ended: ${STOPPED}.`)
    expect(binding.outcome).to.equal(STOPPED)
    binding.dispose()
    expect(binding.outcome).to.equal(STOPPED)
    h.fork = h.app.plugin(chat, chat.Config({} as never))
    expect(await says(h, `subagents.answer ${tag} eu`)).to.deep.equal([`[${tag}] takes no answer any more: run ${binding.id} ended ${STOPPED}.`])
  })

  it('run ids go on across a reload: an id from before it names no run after it (NOT_FOUND), never a new run', async () => {
    h = await harness()
    const before = started(await says(h, 'subagents.run Release v2'), 'Release v2')
    h.fork.dispose()
    h.fork = h.app.plugin(chat, chat.Config({} as never))
    expect(await ended(h, before)).to.equal(`Run ${before} ended: ${STOPPED}.`)
    const after = started(await says(h, 'subagents.run Release v3'), 'Release v3')
    const tag = await ask(h, h.made[1]!.id, 1)
    // The user who saw the old id names it: told there is no such run; the new run is neither answered nor cancelled.
    const none = `No run ${before} in this channel (\`subagents\` lists them).`
    expect(await says(h, `subagents.answer ${before} eu-west`)).to.deep.equal([none])
    expect(await says(h, `subagents.cancel ${before}`)).to.deep.equal([none])
    expect(h.calls).to.deep.equal([])
    expect(h.made[1]!.disposed).to.equal(false)
    expect(after).to.equal(`r${Number(before.slice(1)) + 1}`)
    expect(await says(h, 'subagents')).to.deep.equal([`${after} parked (by alice): Release v3\n  [${tag}] Which region, 1?`])
    // A run an integration binds takes the next id too.
    const binding = h.app.subagentChat.bind({ id: 'root-bound' }, { platform: 'mock', channelId: 'hall', send: async () => undefined })
    expect(binding.id).to.equal(`r${Number(after.slice(1)) + 1}`)
    binding.dispose()
    expect(await says(h, `subagents.answer ${after} eu-west`)).to.deep.equal([`Answer to [${tag}] passed on; run ${after} goes on.`])
    expect(h.calls).to.deep.equal(['resume run-1: eu-west'])
  })

  it('a change of live options (Koishi\'s loader: update) keeps a parked run and applies; runAuthority still reloads', async () => {
    h = await harness()
    const run = started(await says(h, 'subagents.run Release v2'), 'Release v2')
    const tag = await ask(h, h.made[0]!.id, 1)
    h.fork.update({ maxAnswerLength: 8, maxRuns: 1, keepEnded: 4, maxOutputLength: 500, answerBy: 'anyone', timeout: 60_000 })
    expect(h.made[0]!.disposed).to.equal(false)
    expect((await says(h, 'subagents')).join('\n')).to.include(`${run} parked`).and.include(`[${tag}] Which region, 1?`)
    expect(await h.app.mock.client('bob', 'hall').receive('subagents.run another')).to.deep.equal(['1 chat runs are live (maxRuns); wait for one to end or cancel one.'])
    expect(await says(h, `subagents.answer ${tag} eu-west-1`)).to.deep.equal([`That answer is over 8 characters (maxAnswerLength); [${tag}] still waits for a shorter one.`])
    expect(await says(h, `subagents.answer ${tag} eu-west`)).to.deep.equal([`Answer to [${tag}] passed on; run ${run} goes on.`])
    expect(h.calls).to.deep.equal(['resume run-1: eu-west'])
    expect(h.sent.filter((text) => text.startsWith(`Run ${run} ended`))).to.deep.equal([])
    // An option that cannot change live (the command's authority is fixed when it is registered) reloads the plugin.
    h.fork.update({ maxAnswerLength: 8, maxRuns: 1, keepEnded: 4, maxOutputLength: 500, answerBy: 'anyone', timeout: 60_000, runAuthority: 0 })
    expect(await ended(h, run)).to.equal(`Run ${run} ended: ${STOPPED}.`)
    expect(h.made[0]!.disposed).to.equal(true)
  })

  it('a new timeout applies to runs started after it; a live run keeps the bound it started with', async () => {
    h = await harness({ timeout: 150 })
    const run = started(await says(h, 'subagents.run Release v2'), 'Release v2')
    h.fork.update({ timeout: 3_600_000 })
    expect(await ended(h, run)).to.equal(`Run ${run} ended: cancelled (timeout: the run passed 150 ms (timeout)).`)
    expect(h.made[0]!.disposed).to.equal(true)
  })
})
