// A remote's text cut by length where it leaves the provider (a stubbed `fetch` serves the cards and answers, no server):
// the load error naming every host's card problem and the remote agent's name in the host's log. Each ends on a whole
// character, never on half a surrogate pair: a lone surrogate becomes an escape once it is JSON, which strict peers refuse.
// A task id read from a journal for a restore is never cut (a cut id names another task): within 256 characters it is
// sent back to the remote and quoted in the error whole, a longer one is refused with nothing sent.
import { expect } from 'chai'
import { Context, Logger } from 'cordis'
import SubagentService from '@cordis-subagents/subagents-service'
import type { RunRecord } from '@cordis-subagents/subagents-service'
import * as A2a from '@cordis-subagents/provider-a2a'
import { eventually } from '@cordis-subagents/test-support'
import { pool, provider, request, within } from './helpers.js'

const BOUND = 5_000
const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/
/** What JSON.stringify makes of a lone surrogate (a well-formed emoji stays as it is). */
const ESCAPED_HALF = /\\ud[89a-f][0-9a-f]{2}/i
const emoji = (pad: string, count: number) => pad + '😀'.repeat(count)

function wellFormed(text: string | undefined, what: string) {
  expect(text, what).to.be.a('string')
  const at = text!.search(LONE)
  expect(at, `${what} holds half a character: ${JSON.stringify(text!.slice(Math.max(0, at - 6), at + 6))}`).to.equal(-1)
}

/** A card for `origin`; `interfaceUrl` replaces its (usable) interface's URL. */
function card(origin: string, name: string, interfaceUrl = `${origin}/a2a/jsonrpc`) {
  return {
    name, description: '', version: '1.0.0', capabilities: {}, skills: [], defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'],
    supportedInterfaces: [{ url: interfaceUrl, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
  }
}

/** Serves `cardFor(origin)` at every card URL and answers every JSON-RPC request "task not found"; keeps the request bodies. */
function stubRemote(cardFor: (origin: string) => object) {
  const bodies: string[] = []
  const original = globalThis.fetch
  globalThis.fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : String(input))
    const json = (value: unknown) => new Response(JSON.stringify(value), { headers: { 'content-type': 'application/json' } })
    if (url.pathname === A2a.AGENT_CARD_PATH) return json(cardFor(url.origin))
    const body = typeof init?.body === 'string' ? init.body : await new Response(init?.body).text()
    bodies.push(body)
    const { id } = JSON.parse(body) as { id?: unknown }
    return json({ jsonrpc: '2.0', id, error: { code: -32001, message: 'Task not found' } })
  }) as typeof fetch
  return { bodies, restore: () => void (globalThis.fetch = original) }
}

describe('provider-a2a: a remote\'s text cut by length, where it leaves the provider', function () {
  this.timeout(20_000)
  let remote: ReturnType<typeof stubRemote> | undefined
  afterEach(() => {
    remote?.restore()
    remote = undefined
  })

  for (const pad of ['', 'x']) {
    describe(`(the emoji ${pad ? 'after one ASCII character' : 'from the start'})`, () => {
      it('the load error naming each host\'s card problem (its interface URL quoted) cuts each at 400 characters on a whole one', async () => {
        remote = stubRemote((origin) => card(origin, 'hosts', emoji(pad, 300)))
        const refused = await pool(['http://127.0.0.1:9001', 'http://127.0.0.1:9002']).then(() => undefined, (error: Error) => error)
        expect(refused?.message).to.match(/^None of the 2 agent hosts could be used: 1\. .* 2\. /)
        wellFormed(refused!.message, 'the load error')
      })

      // The journal's id is never cut (a cut id names another task): one within 256 characters goes whole, a longer one is refused.
      it('a restore sends the journal\'s task id (within 256 characters) whole and quotes it whole; a longer one is refused', async () => {
        remote = stubRemote((origin) => card(origin, 'restorer'))
        const a2a = await provider('http://127.0.0.1:9003')
        const restore = (taskId: string) => {
          const record = {
            runId: 'run-restored', provider: 'a2a', parentId: 'parent-1', depth: 1, state: 'parked', checkpoint: { taskId },
          } as unknown as RunRecord
          const restored = within(a2a.restore!(record, request()), BOUND, 'restore')
          return restored.then(() => undefined, (error: Error & { code?: string }) => error)
        }
        try {
          const within256 = emoji(pad, 127)
          const refused = await restore(within256)
          expect(refused?.code).to.equal('A2A_RESTORE_FAILED')
          expect(remote.bodies).to.have.length.above(0)
          for (const body of remote.bodies) {
            expect(ESCAPED_HALF.test(body), `the request holds an escaped half character: ${body}`).to.equal(false)
            expect(body, 'the request names the whole id').to.include(within256)
          }
          wellFormed(refused!.message, 'the A2A_RESTORE_FAILED message')
          expect(refused!.message, 'the error quotes the whole id').to.include(within256)

          const sent = remote.bodies.length
          const overlong = await restore(emoji(pad, 200))
          expect(overlong?.code).to.equal('A2A_RESTORE_FAILED')
          expect(remote.bodies, 'nothing sent for an id over 256 characters').to.have.length(sent)
          wellFormed(overlong!.message, 'the A2A_RESTORE_FAILED message')
        } finally {
          await a2a.dispose()
        }
      })

      it('the remote agent\'s name in the host\'s log is cut at 80 characters on a whole one (no escaped half in its JSON)', async () => {
        remote = stubRemote((origin) => card(origin, emoji(pad, 60)))
        const logged: string[] = []
        const target = { colors: 0, showTime: '', print: (text: string) => void logged.push(text), levels: { base: 3 } } as unknown as Logger.Target
        Logger.targets.push(target)
        const ctx = new Context()
        try {
          ctx.plugin(SubagentService, {})
          await ctx.start()
          ctx.plugin(A2a, { name: 'remote', url: 'http://127.0.0.1:9004' } as A2a.Config)
          const line = await eventually(() => logged.find((text) => text.includes('the remote agent')), 'the remote agent logged')
          expect(line).to.include('😀')
          expect(ESCAPED_HALF.test(line), line).to.equal(false)
          wellFormed(line, 'the log line')
        } finally {
          Logger.targets.splice(Logger.targets.indexOf(target), 1)
          await ctx.stop()
        }
      })
    })
  }
})
