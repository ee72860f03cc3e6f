// ChatRuns' bounds against one user and against a channel that is gone: a fair share of the run
// slots per user, an id or tag from the chat echoed bounded and scrubbed, a question the platform
// refused to post cancels its run, and `gone()` cancels the runs of a deleted channel or guild.
import { expect } from 'chai'
import * as entry from '@cordis-subagents/koishi-chat'
import { type ChatSession, ChatRuns } from '../src/chat-runs.js'
import { ChatError } from '../src/errors.js'

const HOSTILE = `r${'\u202e\u200b\u0007'.repeat(10)}${'x'.repeat(100_000)}`

function setup(config: Partial<entry.Config> = {}) {
  const logs: string[] = []
  const stopped: string[] = []
  const host = { pending: () => [], resume: async () => {}, cancel: () => {} }
  const runs = new ChatRuns(entry.Config(config as never), host as never, (message) => logs.push(message))
  const session = (userId: string, channelId: string, send: ChatSession['send'] = async () => ['m1'], guildId?: string): ChatSession =>
    ({ platform: 'mock', userId, channelId, selfId: 'bot', ...guildId ? { guildId } : {}, send })
  let agents = 0
  const bind = (s: ChatSession) => {
    const chat = runs.bind(`root-${++agents}`, s, 'task', (reason) => {
      stopped.push(`${chat.id}: ${reason}`)
      runs.end(chat, 'cancelled', '')
    })
    return chat
  }
  return { runs, logs, stopped, session, bind }
}

/** The ChatError `act` throws. */
function refusal(act: () => unknown): ChatError {
  try {
    act()
  } catch (error) {
    if (error instanceof ChatError) return error
    throw error
  }
  throw new Error('no ChatError thrown')
}

const settle = () => new Promise((resolve) => setImmediate(resolve))

/** The run id `n` after `id` (run ids are numbered for the whole process: ids.ts). */
const after = (id: string, n: number) => `r${Number(id.slice(1)) + n}`

describe('koishi-chat: run limits and a channel that is gone', () => {
  it('maxRunsPerUser (default 2) keeps one user from holding every slot across channels', () => {
    expect(entry.Config({} as never).maxRunsPerUser).to.equal(2)
    expect(() => entry.Config({ maxRunsPerUser: 0 } as never)).to.throw()
    expect(() => entry.Config({ maxRunsPerUser: 65 } as never)).to.throw()
    const { session, bind } = setup()
    const first = bind(session('mallory', 'c1'))
    const second = bind(session('mallory', 'c2'))
    expect(second.id).to.equal(after(first.id, 1))
    const refused = refusal(() => bind(session('mallory', 'c3')))
    expect(refused.code).to.equal('RUN_LIMIT')
    expect(refused.message).to.include(`maxRunsPerUser: ${first.id} in mock:c1, ${second.id} in mock:c2`).and.include('cancel one')
    // The same user id on another platform is another user; others still get their runs (a refused one took no id).
    expect(bind({ ...session('mallory', 'c3'), platform: 'other' }).id).to.equal(after(first.id, 2))
    expect(bind(session('bob', 'c3')).id).to.equal(after(first.id, 3))
  })

  it('numbers run ids for the process: a new ChatRuns (a plugin reload) goes on, and an old id is NOT_FOUND there', () => {
    const before = setup()
    const old = before.bind(before.session('alice', 'room'))
    before.runs.clear('reloaded')
    const { runs, session, bind } = setup()
    const next = bind(session('alice', 'room'))
    expect(next.id).to.equal(after(old.id, 1))
    const refused = refusal(() => runs.get('mock:room', old.id))
    expect([refused.code, refused.message]).to.deep.equal(['NOT_FOUND', `No run ${old.id} in this channel (\`subagents\` lists them).`])
    expect(runs.get('mock:room', next.id)).to.equal(next)
  })

  it('echoes a run id or a question tag from the chat cut to 32 characters, without control, bidi or hidden characters', () => {
    const { runs } = setup()
    for (const message of [refusal(() => runs.get('mock:room', HOSTILE)).message, refusal(() => runs.questions.get('mock:room', HOSTILE)).message]) {
      expect(message.length).to.be.below(160)
      // A cut never ends inside a token (it could be a secret's head), so this one is cut back to its first character.
      expect(message).to.match(/^No (run |question \[)r… \[cut at 32 characters\]\]? (in|waits in) this channel/)
      expect(message).to.not.match(/[\u202e\u200b\u0007]/)
    }
  })

  for (const [name, send] of [
    ['resolves no message id (Koishi\'s send when the platform refused it)', async () => []],
    ['rejects', async () => { throw new Error('403 Missing Access') }],
  ] as const) {
    it(`a question whose post ${name} cancels its run, with a coded log`, async () => {
      const { runs, logs, stopped, session, bind } = setup()
      const chat = bind(session('alice', 'room', send))
      runs.ask(chat, { id: 'q-1', kind: 'ask', text: 'Which region?', path: [] }, undefined)
      await settle()
      // Tags start at a random number per process (questions.ts).
      const tag = /question (q\d+) /.exec(stopped[0] ?? '')?.[1]
      expect(tag).to.match(/^q\d{4,}$/)
      expect(stopped).to.deep.equal([`${chat.id}: question ${tag} could not be posted to this channel (QUESTION_NOT_POSTED)`])
      expect(logs[0]).to.match(new RegExp(`^\\[QUESTION_NOT_POSTED\\] question ${tag} of run ${chat.id} could not be posted to mock:room`))
      expect(runs.list('mock:room')).to.include(`${chat.id} ended cancelled (question ${tag} could not be posted`)
    })
  }

  it('a posted question keeps its run; gone() cancels the runs of a deleted guild or channel only', async () => {
    const { runs, logs, stopped, session, bind } = setup({ maxRunsPerUser: 8 })
    const inGuild = bind(session('alice', 'room', undefined, 'g1'))
    const other = bind(session('alice', 'elsewhere', undefined, 'g2'))
    const channel = bind(session('alice', 'side'))
    runs.ask(inGuild, { id: 'q-1', kind: 'ask', text: 'Which region?', path: [] }, undefined)
    await settle()
    expect(stopped).to.deep.equal([])
    expect(runs.gone({ platform: 'mock', selfId: 'another-bot', guildId: 'g1' }, 'the bot was removed from its guild')).to.deep.equal([])
    expect(runs.gone({ platform: 'mock', selfId: 'bot', guildId: 'g1' }, 'its guild was deleted')).to.deep.equal([inGuild.id])
    expect(runs.gone({ platform: 'mock', channelId: 'side' }, 'its channel was deleted')).to.deep.equal([channel.id])
    expect(stopped).to.deep.equal([
      `${inGuild.id}: its guild was deleted (CHANNEL_GONE)`,
      `${channel.id}: its channel was deleted (CHANNEL_GONE)`,
    ])
    expect(logs).to.deep.equal([
      `[CHANNEL_GONE] run ${inGuild.id} in mock:room is cancelled: its guild was deleted.`,
      `[CHANNEL_GONE] run ${channel.id} in mock:side is cancelled: its channel was deleted.`,
    ])
    expect(runs.list('mock:elsewhere')).to.include(`${other.id} running`)
  })

  it('caps the whole end message at maxOutputLength (prefix and cut marker included); a refused one is told briefly', async () => {
    const { runs, logs, session, bind } = setup()
    const sent: string[] = []
    const ok = bind(session('alice', 'room', async (text) => { sent.push(text); return ['m1'] }))
    runs.end(ok, 'completed', `${'w '.repeat(4000)}end`)
    expect(sent).to.have.length(1)
    expect(sent[0]!.length).to.be.at.most(2000)
    expect(sent[0]).to.match(new RegExp(`^Run ${ok.id} ended: completed\\.\\nw w `)).and.match(/w … \[cut at 2000 characters\]$/)
    // A short one is posted whole.
    const short = bind(session('alice', 'room', async (text) => { sent.push(text); return ['m2'] }))
    runs.end(short, 'completed', 'short')
    expect(sent[1]).to.equal(`Run ${short.id} ended: completed.\nshort`)
    let calls = 0
    const refused = bind(session('bob', 'room', async (text) => {
      if (++calls === 1) throw new Error('400 Must be 2000 or fewer in length')
      sent.push(text)
      return ['m3']
    }))
    runs.end(refused, 'completed', 'an answer')
    await settle()
    await settle()
    expect(sent[2]).to.equal(`Run ${refused.id} ended, but its answer could not be posted here (FINAL_NOT_POSTED).`)
    expect(logs).to.deep.equal([
      `[FINAL_NOT_POSTED] the end of run ${refused.id} could not be posted to mock:room (400 Must be 2000 or fewer in length).`,
    ])
  })
})
