// Per-response counts (tool calls, choices, content parts) are cut while the body is read: a
// hostile endpoint's 200,000 tool calls cost what the cap costs, in time, memory and transcript.
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { expect } from 'chai'
import fc from 'fast-check'
import { Context } from 'cordis'
import { z } from 'zod'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime, { type AssistantMessage, type Message } from '@cordis-subagents/agent'
import * as ModelOpenAI from '@cordis-subagents/model-openai'
import { ArrayCappingScanner, fromCompletion, MAX_JSON_DEPTH, RESPONSE_LIMITS } from '@cordis-subagents/model-openai/testing'
import { completion, FakeOpenAIServer } from './fixtures/server.js'

/** A compact chat completion with `count` tool calls (about 75 bytes each, like the 14.8 MiB body). */
function manyCalls(count: number): Buffer {
  const calls = Array.from({ length: count }, (_, i) => ({ id: `c${i}`, name: 'echo', arguments: '{}' }))
  return Buffer.from(JSON.stringify(completion({ content: null, finishReason: 'tool_calls', toolCalls: calls })))
}

function balanced(messages: readonly Message[]): boolean {
  const open = new Set<string>()
  for (const message of messages) {
    if (message.role === 'assistant') {
      if (open.size) return false
      for (const call of message.toolCalls ?? []) open.add(call.id)
    } else if (message.role === 'tool') {
      if (!open.delete(message.toolCallId)) return false
    } else if (open.size) {
      return false
    }
  }
  return open.size === 0
}

describe('model-openai: per-response counts are capped at parse time', () => {
  describe('a 200,000-call response from a real loopback server, through ctx.agents', function () {
    // Generous: without the cut this step took 8 s to 16 s (and the test must fail, not time out).
    this.timeout(120_000)
    let server: FakeOpenAIServer
    let ctx: Context

    beforeEach(async () => {
      server = await FakeOpenAIServer.start()
      ctx = new Context()
      ctx.plugin(ToolRegistry)
      ctx.plugin(AgentRuntime)
      await ctx.start()
    })
    afterEach(async () => {
      await ctx.stop()
      await server.close()
      expect(server.openSockets).to.equal(0)
    })

    it('runs 32 calls, keeps one summary note for the other 199,968, and never blocks the event loop for long', async () => {
      const body = manyCalls(200_000)
      expect(body.length).to.be.above(14 * 1024 * 1024).and.below(ModelOpenAI.Config({}).maxResponseBytes)
      server.reply(
        (_request, res) => {
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length })
          res.end(body)
        },
        { body: completion({ content: 'done' }) },
      )
      let ran = 0
      ctx.plugin({
        name: 'echo-tool',
        inject: ['tools'],
        apply: (child: Context) => {
          child.tools.register({ name: 'echo', description: 'Echo.', input: z.object({}), execute: () => ({ content: `ok ${++ran}` }) })
        },
      })
      ctx.plugin(ModelOpenAI, { name: 'hostile', baseURL: server.baseURL, apiKey: '', model: 'm', maxRetries: 0 })
      await ctx.lifecycle.flush()
      const agent = ctx.agents.create({ model: 'hostile' })

      const delay = monitorEventLoopDelay({ resolution: 20 })
      delay.enable()
      const result = await agent.run('go')
      delay.disable()
      await agent.dispose()

      expect(result).to.include({ stopReason: 'completed', text: 'done', toolCalls: 32 })
      expect(ran).to.equal(32)
      const messages = agent.transcript.messages
      // user, assistant with 32 calls, 32 results, one note, the answer: the cap plus one, not 200,000.
      expect(messages).to.have.length(36)
      expect((messages[1] as AssistantMessage).toolCalls).to.have.length(32)
      expect(messages[34]).to.include({ role: 'user' })
      expect(messages[34]!.content).to.include('asked for 200000 tool calls').and.include('other 199968 were dropped')
        .and.include('maxToolCallsPerStep')
      expect(balanced(messages)).to.equal(true)
      // The next request carries the kept calls, their results and the note: a few KiB, not 55 MB.
      const second = server.requests[1]!.body as { messages: unknown[] }
      expect(second.messages).to.have.length(35)
      expect(JSON.stringify(second).length).to.be.below(64 * 1024)
      // Without the cut one step blocked the loop for 5 s to 16 s; with it, chunks of a few ms.
      expect(delay.max / 1e6).to.be.below(1000)
    })
  })

  describe('fromCompletion', () => {
    it('decodes at most maxToolCalls calls across split choices and counts the rest', () => {
      const body = completion({ content: 'x', finishReason: 'tool_calls', toolCalls: [{ name: 't', arguments: '{}' }] })
      const choice = (body.choices as Array<Record<string, unknown>>)[0]!
      body.choices = Array.from({ length: 3000 }, (_, index) => ({ ...choice, index }))
      const res = fromCompletion(body as never, { maxToolCalls: 5 })
      expect(res.toolCalls).to.have.length(5)
      // 3,000 choices of one call: 5 decoded, the rest of the looked-at choices and every later one counted.
      expect(res.droppedToolCalls).to.equal(2995)
      expect(res.finishReason).to.equal('tool-calls')
    })

    it('never decodes more than its own ceiling, whatever the request asks for', () => {
      const calls = Array.from({ length: RESPONSE_LIMITS.toolCalls + 10 }, () => ({ name: 't', arguments: '{}' }))
      const body = completion({ toolCalls: calls, finishReason: 'tool_calls' })
      for (const maxToolCalls of [undefined, Number.NaN, -1, 1e9]) {
        const res = fromCompletion(body as never, { maxToolCalls })
        expect(res.toolCalls, String(maxToolCalls)).to.have.length(RESPONSE_LIMITS.toolCalls)
        expect(res.droppedToolCalls).to.equal(10)
      }
    })

    it('joins at most RESPONSE_LIMITS.contentParts content parts', () => {
      const body = completion({ content: null })
      ;((body.choices as Array<{ message: Record<string, unknown> }>)[0]!).message.content = Array.from({ length: 5000 }, () => ({ type: 'text', text: 'a' }))
      expect(fromCompletion(body as never).text).to.equal('a'.repeat(RESPONSE_LIMITS.contentParts))
    })
  })

  describe('ArrayCappingScanner', () => {
    /** What the scanner must produce: every array cut to `max` elements; cut elements counted by the array's key. */
    function reference(value: unknown, max: number, key: string, cut: Map<string, number>, inCut: boolean): unknown {
      if (Array.isArray(value)) {
        const dropped = inCut ? value.length : Math.max(0, value.length - max)
        if (dropped) cut.set(key, (cut.get(key) ?? 0) + dropped)
        return value.map((item, i) => reference(item, max, '', cut, inCut || i >= max)).slice(0, inCut ? 0 : max)
      }
      if (value && typeof value === 'object') {
        // Keys longer than the scanner remembers (64 bytes as sent) are counted under ''.
        return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, reference(v, max, Buffer.byteLength(JSON.stringify(k)) - 2 > 64 ? '' : k, cut, inCut)]))
      }
      return value
    }

    function scan(text: string, max: number, splits: number[]): { value: unknown; cut: Map<string, number> } {
      const bytes = Buffer.from(text)
      const scanner = new ArrayCappingScanner(max)
      let from = 0
      for (const at of [...splits.map((n) => n % (bytes.length + 1)).sort((a, b) => a - b), bytes.length]) {
        scanner.push(bytes.subarray(from, Math.max(from, at)))
        from = Math.max(from, at)
      }
      return { value: JSON.parse(scanner.text()), cut: new Map(scanner.cut) }
    }

    it('equals "cut every array, then parse" for any JSON, any cap and any chunking (even inside a character)', () => {
      fc.assert(fc.property(
        fc.oneof(fc.jsonValue({ maxDepth: 5 }), fc.jsonValue({ maxDepth: 3, depthSize: 'large' })), fc.integer({ min: 1, max: 4 }), fc.array(fc.nat(), { maxLength: 8 }),
        (value, max, splits) => {
          const text = JSON.stringify(value)
          const cut = new Map<string, number>()
          const expected = reference(JSON.parse(text), max, '', cut, false)
          const got = scan(text, max, splits)
          expect(got.value).to.deep.equal(expected)
          expect([...got.cut].sort()).to.deep.equal([...cut].sort())
        },
      ), { numRuns: 500 })
    })

    it('is not fooled by brackets, commas, quotes and multi-byte text inside strings', () => {
      const text = JSON.stringify({ tool_calls: ['a,"]b', '[[{', 'é😀\\"', 'x', 'y'], 'k]"': [1, 2, 3] })
      for (let split = 0; split <= Buffer.byteLength(text); split++) {
        const got = scan(text, 2, [split])
        expect(got.value).to.deep.equal({ tool_calls: ['a,"]b', '[[{'], 'k]"': [1, 2] })
        expect(got.cut.get('tool_calls')).to.equal(3)
      }
    })

    it(`refuses nesting deeper than ${MAX_JSON_DEPTH} levels instead of growing without end`, () => {
      const scanner = new ArrayCappingScanner(8)
      expect(() => scanner.push(Buffer.from('['.repeat(MAX_JSON_DEPTH + 1)))).to.throw(/deeper than 256/)
    })
  })
})
