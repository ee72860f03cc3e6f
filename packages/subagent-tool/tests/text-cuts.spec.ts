/// <reference types="mocha" />
import { setMaxListeners } from 'node:events'
import { expect } from 'chai'
import type { Agent } from '@cordis-subagents/agent'
import { TeamBoard } from '../src/team/board.js'
import { setup, until } from './helpers.js'
import { backgroundHost, type BackgroundHost, scriptedParent } from '../../../test/support/background.js'

// Text from outside (a teammate's message, a child's progress line) that the tool cuts before a model or a person reads
// it: every cut ends on a character boundary, never in half of a surrogate pair (an emoji).

const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/
const EMOJI = '\u{1F600}'

function wellFormed(text: string | undefined, what: string): string {
  expect(text, what).to.be.a('string')
  expect(LONE.test(text!), `${what} holds half a surrogate pair: ${JSON.stringify(text!.slice(-8))}`).to.equal(false)
  return text!
}

describe('cuts of outside text in the subagent tool end on a character boundary', () => {
  it('a teammate\'s unread message bounced to its sender quotes a 200-unit excerpt that keeps whole characters', async () => {
    const h = await setup()
    try {
      h.ctx.agents.registerModel('waits', {
        generate: ({ signal }) => new Promise((_resolve, reject) => signal?.addEventListener('abort', () => reject(signal.reason), { once: true })),
      })
      const coordinator = h.ctx.agents.create({ label: 'coordinator' })
      const board = new TeamBoard(coordinator)
      const [a, b] = ['a', 'b'].map((label) => h.ctx.agents.create({ parent: coordinator, label, model: 'waits' })) as [Agent, Agent]
      board.join('a', a)
      board.join('b', b)
      const turn = b.run('work')
      await board.post(await board.member(a), 'b', `${'m'.repeat(199)}${EMOJI} and the rest`)
      // b ends before reading it; a runs no turn, so its coordinator is told, with the excerpt.
      await b.dispose()
      await turn
      const [notice] = coordinator.inbox.take().map((message) => message.content)
      expect(wellFormed(notice, 'the bounce notice').endsWith(`\n> ${'m'.repeat(199)}…`)).to.equal(true)
      await a.dispose()
    } finally {
      await h.stop()
    }
  })

  describe('a background task\'s last progress line', () => {
    let host: BackgroundHost | undefined
    afterEach(async () => { await host?.stop() })

    it('is cut to 200 units on a character boundary, and the status verb quotes it without an escaped half', async () => {
      host = await backgroundHost()
      const view = host.ctx.tools.view()
      const { agent } = scriptedParent(host.ctx, [])
      const exec = { signal: new AbortController().signal, agent, toolCallId: 'c' }
      setMaxListeners(0, exec.signal)
      await view.execute({ name: 'subagent', input: { description: 'long lines', prompt: 'p' } }, exec)
      const task = () => host!.ctx.subagents.background.peek(agent)!.get('bg-1')
      await until(() => task().state === 'running' && host!.provider.runs.length === 1, 'the task runs')
      host.provider.runs[0].update('text', `${'x'.repeat(198)}${EMOJI} and more`)
      expect(wellFormed(task().lastProgress, 'lastProgress')).to.equal(`${'x'.repeat(198)}…`)
      const status = await view.execute({ name: 'subagent_status', input: { handles: ['bg-1'] } }, exec)
      expect(status.content).to.include(`last: "${'x'.repeat(198)}…"`)
      // A line of exactly 200 units is kept whole.
      host.provider.runs[0].update('text', `${'y'.repeat(198)}${EMOJI}`)
      expect(task().lastProgress).to.equal(`${'y'.repeat(198)}${EMOJI}`)
      host.provider.runs[0].complete('done')
      await until(() => task().state !== 'running', 'the task ends')
    })
  })
})
