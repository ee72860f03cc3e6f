// koishi-chat in a Koishi App with the mock adapter: what the commands echo of an id from the chat,
// and the platform's events for a channel the bot can no longer post to (tests/support/koishi-mock.ts).
import { expect } from 'chai'
import { eventually } from '@cordis-subagents/test-support'
import type { ChatSession } from '../src/chat-runs.js'
import { type MockApp, mockApp, type Observed } from './support/koishi-mock.js'

describe('koishi-chat in a Koishi App: echoed ids and a channel that is gone', () => {
  let app: MockApp
  let close: () => Promise<void>
  let observed: Observed

  beforeEach(async () => {
    ({ app, observed, close } = await mockApp())
    await app.mock.initUser('alice', 1)
  })

  afterEach(() => close())

  it('subagents.cancel and subagents.answer echo a hostile id bounded and scrubbed', async () => {
    const token = `r${'\u202e\u200b\u0007'.repeat(10)}${'x'.repeat(1_000_000)}`
    const alice = app.mock.client('alice', 'room')
    const [cancel] = await alice.receive(`subagents.cancel ${token}`)
    expect(cancel).to.equal('No run r… [cut at 32 characters] in this channel (`subagents` lists them).')
    const [answer] = await alice.receive('subagents.answer q\u202e\u0007\u200b1 hi')
    expect(answer).to.equal('No question [q1] waits in this channel (`subagents` lists them).')
  })

  it('a question the platform refuses to take cancels its run; one sent through an adapter that reports no ids does not', async () => {
    let grabbed: unknown
    app.command('grab').action(({ session }) => {
      grabbed = session
      return 'ok'
    })
    const alice = app.mock.client('alice', 'room')
    await alice.receive('grab')
    const binding = app.subagentChat.bind({ id: 'root-a' }, grabbed as ChatSession)
    const ask = (n: number) => {
      const info = { runId: `run-${n}`, parentId: 'root-a', childId: `child-${n}` }
      observed['subagent/start']!(info)
      observed['subagent/pending']!(info, { id: `question-${n}`, kind: 'ask', text: `Question ${n}?`, path: [] })
    }
    const listed = async () => (await alice.receive('subagents')).join('\n')
    // The mock adapter sends without reporting message ids (Koishi's Session.send resolves [] for it as for a refusal).
    ask(1)
    expect(await eventually(async () => /\[q\d+\] Question 1\?/.test(await listed()) && await listed(), 'q1 listed')).to.include(`${binding.id} parked`)
    const bot = app.bots[0]!
    // The platform refuses the second question only, so the list still reaches the spec.
    const send = bot.sendMessage.bind(bot)
    bot.sendMessage = async (...args: unknown[]) => {
      if (String(args[1]).includes('Question 2?')) throw new Error('403 Missing Access (the bot is not in the guild)')
      return send(...args)
    }
    ask(2)
    expect(await eventually(async () => {
      const text = await listed()
      return text.includes(`${binding.id} ended`) && text
    }, 'the run ended')).to.match(new RegExp(`${binding.id} ended cancelled \\(question q\\d+ could not be posted to this channel \\(QUESTION_NOT_POSTED\\)\\)`))
  })

  it('guild-deleted, the bot removed from its guild and channel-deleted cancel the runs there', async () => {
    const bot = app.bots[0]!
    const bind = (channelId: string, guildId: string) => app.subagentChat.bind({ id: `root-${channelId}` }, {
      platform: 'mock', channelId, guildId, userId: `user-${channelId}`, selfId: bot.selfId, send: async () => ['m1'],
    })
    const ids = [bind('room', 'g1').id, bind('hall', 'g2').id, bind('side', 'g3').id, bind('kept', 'g4').id]
    const listed = async (channel: string) => (await app.mock.client('alice', channel).receive('subagents')).join('\n')
    // Satori emits `guild-removed` for a `guild-deleted` too (and `guild-member-removed` for `guild-member-deleted`).
    bot.dispatch(bot.session({ type: 'guild-deleted', guild: { id: 'g1' } }))
    // Another member leaving is no reason; the bot itself removed is.
    bot.dispatch(bot.session({ type: 'guild-member-removed', guild: { id: 'g2' }, user: { id: 'someone' } }))
    expect(await listed('hall')).to.include(`${ids[1]} running`)
    bot.dispatch(bot.session({ type: 'guild-member-deleted', guild: { id: 'g2' }, user: { id: bot.selfId } }))
    bot.dispatch(bot.session({ type: 'channel-deleted', channel: { id: 'side', type: 0 }, guild: { id: 'g3' } }))
    const ended = [
      ['room', `${ids[0]} ended cancelled (the bot is no longer in its guild (CHANNEL_GONE))`],
      ['hall', `${ids[1]} ended cancelled (the bot was removed from its guild (CHANNEL_GONE))`],
      ['side', `${ids[2]} ended cancelled (its channel was deleted (CHANNEL_GONE))`],
    ]
    const lists = await eventually(async () => {
      const now = await Promise.all(ended.map(([channel]) => listed(channel!)))
      return now.every((text, i) => text.includes(ended[i]![1]!)) && now
    }, 'the three runs listed as cancelled')
    expect(lists).to.have.length(3)
    expect(await listed('kept')).to.include(`${ids[3]} running`)
  })
})
