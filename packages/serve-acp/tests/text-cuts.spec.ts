/// <reference types="mocha" />
// What this server cuts before a client (or the session's model) reads it is cut on a character boundary: the
// tool_call `title`, a refused cwd, a session id quoted in a refusal, and a parent's refusal of `tell_parent`. A cut by
// UTF-16 index that fell inside a surrogate pair left half an emoji, which JSON carries as a `\ud83d` escape that strict
// peers refuse (Python's UTF-8 encoder, PostgreSQL jsonb).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { Context } from 'cordis'
import * as sdk from '@agentclientprotocol/sdk'
import AgentRuntime, { type AgentEvent, ScriptedModel } from '@cordis-subagents/agent'
import ToolRegistry from '@cordis-subagents/tools'
import * as ServeAcp from '../src/index.js'
import { cwdProblem } from '../src/session-limits.js'
import { tellClient } from '../src/tell-client.js'
import { eventUpdate } from '../src/updates.js'

const EMOJI = '\u{1F600}'
const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

function expectWellFormed(text: string) {
  expect(LONE.test(text), `lone surrogate in ${JSON.stringify(text.slice(-40))}`).to.equal(false)
}

const toolCall = (input: unknown) => eventUpdate({ type: 'tool-call', call: { id: 'c1', name: 'write_file', input } } as AgentEvent)!

describe('serve-acp: cuts of text sent to a client', () => {
  it('a tool_call title whose 200th unit is the first half of an emoji is cut before the emoji', () => {
    // "write_file " (11) + '{"text":"' (9) + 179 units: the emoji's first half is unit 200.
    const title = toolCall({ text: 'a'.repeat(179) + EMOJI + ' done' }).title as string
    expectWellFormed(title)
    expect(title).to.equal(`write_file {"text":"${'a'.repeat(179)}`)
  })

  it('a title that fits is sent whole, emoji included', () => {
    const title = toolCall({ text: 'a'.repeat(176) + EMOJI }).title as string
    expect(title).to.equal(`write_file {"text":"${'a'.repeat(176)}${EMOJI}"}`)
  })

  it('a refused cwd is quoted cut on a character boundary', async () => {
    const relative = await cwdProblem('r'.repeat(198) + EMOJI + 'more')
    expectWellFormed(relative!)
    expect(relative).to.equal(`cwd must be an absolute path, got "${'r'.repeat(198)}`)
    const missing = await cwdProblem('/' + 'd'.repeat(198) + EMOJI + 'more')
    expectWellFormed(missing!)
    expect(missing).to.equal(`cwd /${'d'.repeat(198)} is not an existing directory`)
  })

  it('a parent\'s refusal of tell_parent is passed on cut on a character boundary', async () => {
    const refusal = Object.assign(new Error('m'.repeat(499) + EMOJI + 'more'), { data: { code: 'C'.repeat(31) + EMOJI } })
    const tell = tellClient(() => ({ request: async () => { throw refusal } }), 'session-1')
    let error: { code?: string; message?: string } | undefined
    try {
      await tell('hello', {})
    } catch (caught) {
      error = caught as typeof error
    }
    expectWellFormed(error!.code!)
    expectWellFormed(error!.message!)
    expect(error!.code).to.equal('C'.repeat(31))
    expect(error!.message).to.equal('m'.repeat(499))
  })

  describe('a session id quoted in a refusal', () => {
    let ctx: Context
    let dir: string
    let connection: ReturnType<ReturnType<typeof sdk.client>['connect']>

    beforeEach(async () => {
      dir = mkdtempSync(join(tmpdir(), 'serve-acp-text-cuts-'))
      ctx = new Context()
      ctx.plugin(ToolRegistry)
      ctx.plugin(AgentRuntime, { model: 'scripted' })
      const model = new ScriptedModel(() => ScriptedModel.text('hi'))
      ctx.plugin({ name: 'model', inject: ['agents'], apply: (c: Context) => { c.agents.registerModel('scripted', model) } })
      await ctx.start()
      const toServer = new TransformStream<Uint8Array, Uint8Array>()
      const toClient = new TransformStream<Uint8Array, Uint8Array>()
      ctx.plugin(ServeAcp, { transport: { input: toServer.readable, output: toClient.writable }, store: join(dir, 'store') } as never)
      await ctx.lifecycle.flush()
      connection = sdk.client({ name: 'spec' }).connect(sdk.ndJsonStream(toServer.writable, toClient.readable))
      await connection.agent.request(sdk.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} })
    })

    afterEach(async () => {
      await ctx.stop()
      rmSync(dir, { recursive: true, force: true })
    })

    async function refused(request: Promise<unknown>): Promise<string> {
      try {
        await request
      } catch (error) {
        return (error as Error).message
      }
      throw new Error('the request was answered')
    }

    it('session/prompt, session/close and session/load cut it on a character boundary', async () => {
      // '"' + 118 units: the emoji's first half is unit 120 of the quoted id.
      const sessionId = 'x'.repeat(118) + EMOJI + 'more'
      const { agent } = connection
      const messages = [
        await refused(agent.request(sdk.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'hi' }] })),
        await refused(agent.request(sdk.methods.agent.session.close, { sessionId })),
        await refused(agent.request(sdk.methods.agent.session.load, { sessionId, cwd: dir, mcpServers: [] })),
      ]
      for (const message of messages) {
        expectWellFormed(message)
        expect(message).to.include(`"${'x'.repeat(118)}`)
      }
    })
  })
})
