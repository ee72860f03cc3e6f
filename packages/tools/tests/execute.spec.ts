/// <reference types="mocha" />
import { expect } from 'chai'
import type { Context } from 'cordis'
import fc from 'fast-check'
import { z } from 'zod'
import type { ToolExecContext, ToolResult, ToolUpdate } from '@cordis-subagents/tools'
import { makeExec, makeTool, setup } from './helpers.js'

describe('ToolView.execute', () => {
  let ctx: Context

  beforeEach(async () => {
    ({ ctx } = await setup())
  })

  afterEach(async () => {
    await ctx.stop()
  })

  /** A tool that counts its calls. */
  function counted(name: string) {
    const calls: unknown[] = []
    ctx.tools.register(makeTool(name, {
      execute: (input) => {
        calls.push(input)
        return { content: 'ran' }
      },
    }))
    return calls
  }

  describe('unknown and filtered names', () => {
    it('an unknown name is an error that lists the visible tools', async () => {
      counted('a')
      counted('b')
      const result = await ctx.tools.view({ deny: ['b'] }).execute({ name: 'nope', input: {} }, makeExec())
      expect(result).to.deep.equal({ isError: true, content: 'Unknown tool "nope". Available tools: a.' })
    })

    it('a filtered-out name gives exactly the result of an unknown one (same visible tools)', async () => {
      counted('a')
      counted('b')
      const secretCalls = counted('secret')
      const call = { id: 'c1', name: 'secret', input: { text: 'x' } }
      const filtered = await ctx.tools.view().restrict({ deny: ['secret'] }).execute(call, makeExec())
      // the same visible set {a, b}, but now "secret" does not exist at all
      const other = await setup()
      try {
        other.ctx.tools.register(makeTool('a'))
        other.ctx.tools.register(makeTool('b'))
        const unknown = await other.ctx.tools.view().execute(call, makeExec())
        expect(filtered).to.deep.equal(unknown)
        expect(filtered.isError).to.equal(true)
      } finally {
        await other.ctx.stop()
      }
      expect(secretCalls).to.deep.equal([])
    })

    it('a filtered name stays hidden even when the input is invalid or the signal is aborted', async () => {
      counted('a')
      counted('secret')
      const view = ctx.tools.view({ allow: ['a'] })
      const controller = new AbortController()
      controller.abort()
      const plain = await view.execute({ name: 'secret', input: {} }, makeExec())
      const aborted = await view.execute({ name: 'secret', input: { text: 1 } }, makeExec({ signal: controller.signal }))
      expect(aborted).to.deep.equal(plain)
      expect(plain.content).to.match(/^Unknown tool "secret"/)
    })

    it('an empty view reports that no tools are available', async () => {
      const result = await ctx.tools.view({ allow: [] }).execute({ name: 'x', input: {} }, makeExec())
      expect(result).to.deep.equal({ isError: true, content: 'Unknown tool "x". Available tools: (none).' })
    })
  })

  describe('input validation', () => {
    it('invalid input is an error naming the field, and execute is not called', async () => {
      const calls = counted('echo')
      const result = await ctx.tools.view().execute({ name: 'echo', input: { text: 42 } }, makeExec())
      expect(result.isError).to.equal(true)
      expect(result.content).to.include('Invalid input for tool "echo"')
      expect(result.content).to.include('expected string').and.include('text')
      expect(calls).to.deep.equal([])
    })

    it('a missing required field is reported by its name', async () => {
      ctx.tools.register({
        name: 'search',
        description: 'Search.',
        input: z.object({ query: z.string(), limit: z.number() }),
        execute: () => ({ content: 'ok' }),
      })
      const result = await ctx.tools.view().execute({ name: 'search', input: { query: 'x' } }, makeExec())
      expect(result.isError).to.equal(true)
      expect(result.content).to.match(/limit/)
    })

    it('an async refinement is awaited rather than crashing execute', async () => {
      ctx.tools.register({
        name: 'checked',
        description: 'Checked.',
        input: z.object({ path: z.string().refine(async (path) => !path.includes('..'), 'no parent directories') }),
        execute: ({ path }) => ({ content: `read ${path}` }),
      })
      const view = ctx.tools.view()
      expect(await view.execute({ name: 'checked', input: { path: 'a/b' } }, makeExec())).to.deep.equal({ content: 'read a/b' })
      const bad = await view.execute({ name: 'checked', input: { path: '../x' } }, makeExec())
      expect(bad.isError).to.equal(true)
      expect(bad.content).to.include('no parent directories')
    })

    it('a throwing transform becomes an error result', async () => {
      ctx.tools.register({
        name: 'strict',
        description: 'Strict.',
        input: z.object({ n: z.string().transform(() => { throw new Error('transform exploded') }) }),
        execute: () => ({ content: 'unreachable' }),
      })
      const result = await ctx.tools.view().execute({ name: 'strict', input: { n: 'x' } }, makeExec())
      expect(result.isError).to.equal(true)
      expect(result.content).to.include('transform exploded')
    })
  })

  describe('abort', () => {
    it('an already-aborted signal is an error and the tool is never called', async () => {
      const calls = counted('slow')
      const controller = new AbortController()
      controller.abort()
      const result = await ctx.tools.view().execute({ name: 'slow', input: { text: 'x' } }, makeExec({ signal: controller.signal }))
      expect(result.isError).to.equal(true)
      expect(result.content).to.include('aborted')
      expect(calls).to.have.length(0)
    })

    it('a signal aborted during async validation still keeps the tool from running', async () => {
      const controller = new AbortController()
      let calls = 0
      ctx.tools.register({
        name: 'guarded',
        description: 'Guarded.',
        input: z.object({ x: z.string().refine(async () => { controller.abort(); return true }) }),
        execute: () => { calls++; return { content: 'ran' } },
      })
      const result = await ctx.tools.view().execute({ name: 'guarded', input: { x: 'y' } }, makeExec({ signal: controller.signal }))
      expect(result.isError).to.equal(true)
      expect(calls).to.equal(0)
    })
  })

  describe('tool failures', () => {
    it('a tool that throws synchronously becomes an error with its message', async () => {
      ctx.tools.register(makeTool('sync', { execute: () => { throw new Error('disk on fire') } }))
      const result = await ctx.tools.view().execute({ name: 'sync', input: { text: 'x' } }, makeExec())
      expect(result).to.deep.equal({ isError: true, content: 'Tool "sync" failed: disk on fire' })
    })

    it('a tool that rejects becomes an error with its message', async () => {
      ctx.tools.register(makeTool('async', { execute: async () => { throw new TypeError('bad gateway') } }))
      const result = await ctx.tools.view().execute({ name: 'async', input: { text: 'x' } }, makeExec())
      expect(result).to.deep.equal({ isError: true, content: 'Tool "async" failed: bad gateway' })
    })

    it('a thrown non-Error value is reported as text', async () => {
      ctx.tools.register(makeTool('odd', { execute: () => { throw 'plain string' } }))
      const result = await ctx.tools.view().execute({ name: 'odd', input: { text: 'x' } }, makeExec())
      expect(result).to.deep.equal({ isError: true, content: 'Tool "odd" failed: plain string' })
    })

    for (const [label, garbage] of [
      ['undefined', undefined],
      ['null', null],
      ['a bare string', 'just text'],
      ['a non-string content', { content: 5 }],
      ['an object without content', { text: 'hi' }],
    ] as const) {
      it(`a tool returning ${label} becomes an error`, async () => {
        ctx.tools.register(makeTool('garbage', { execute: async () => garbage as unknown as ToolResult }))
        const result = await ctx.tools.view().execute({ name: 'garbage', input: { text: 'x' } }, makeExec())
        expect(result.isError).to.equal(true)
        expect(result.content).to.include('invalid result')
      })
    }
  })

  describe('success', () => {
    it('passes the parsed (transformed, defaulted) input and the exec context through', async () => {
      let seen: { input: unknown; exec: ToolExecContext } | undefined
      ctx.tools.register({
        name: 'shout',
        description: 'Shouts.',
        input: z.object({ text: z.string().transform((s) => s.toUpperCase()), times: z.number().int().default(2) }),
        execute: (input, exec) => {
          seen = { input, exec }
          exec.onUpdate?.({ kind: 'progress', text: 'half way' })
          return { content: input.text.repeat(input.times), metadata: { ok: true }, usage: { inputTokens: 3, outputTokens: 4 } }
        },
      })
      const updates: ToolUpdate[] = []
      const exec = makeExec({ toolCallId: 'call-7', agent: { id: 'root', depth: 2 }, onUpdate: (u) => updates.push(u) })
      const result = await ctx.tools.view().execute({ id: 'call-7', name: 'shout', input: { text: 'hi' } }, exec)
      expect(result).to.deep.equal({ content: 'HIHI', metadata: { ok: true }, usage: { inputTokens: 3, outputTokens: 4 } })
      expect(seen!.input).to.deep.equal({ text: 'HI', times: 2 })
      expect(seen!.exec).to.equal(exec)
      expect(updates).to.deep.equal([{ kind: 'progress', text: 'half way' }])
    })

    it('a tool reporting its own isError result is passed through unchanged', async () => {
      ctx.tools.register(makeTool('soft', { execute: () => ({ content: 'not found', isError: true }) }))
      const result = await ctx.tools.view().execute({ name: 'soft', input: { text: 'x' } }, makeExec())
      expect(result).to.deep.equal({ content: 'not found', isError: true })
    })

    it('a missing input counts as an empty object', async () => {
      ctx.tools.register({
        name: 'now',
        description: 'Now.',
        input: z.object({ tz: z.string().default('UTC') }),
        execute: ({ tz }) => ({ content: tz }),
      })
      const result = await ctx.tools.view().execute({ name: 'now', input: undefined }, makeExec())
      expect(result).to.deep.equal({ content: 'UTC' })
    })
  })

  describe('never throws (property)', () => {
    it('resolves to a { content: string } result for any call shape', async () => {
      ctx.tools.register(makeTool('echo'))
      ctx.tools.register(makeTool('boom', { execute: () => { throw new Error('boom') } }))
      const view = ctx.tools.view({ deny: ['boom'] })
      const callArb = fc.oneof(
        fc.record({ name: fc.constantFrom('echo', 'boom', 'nope', ''), input: fc.anything() }),
        fc.record({ name: fc.anything(), input: fc.anything() }),
        fc.constantFrom(null, undefined, {}),
      )
      await fc.assert(fc.asyncProperty(callArb, fc.boolean(), async (call, aborted) => {
        const controller = new AbortController()
        if (aborted) controller.abort()
        const result = await view.execute(call as never, makeExec({ signal: controller.signal }))
        expect(result.content).to.be.a('string')
      }), { numRuns: 200 })
    })

    it('does not throw when the exec context is missing', async () => {
      ctx.tools.register(makeTool('echo'))
      const result = await ctx.tools.view().execute({ name: 'echo', input: { text: 'x' } }, undefined as never)
      expect(result.content).to.equal('echo:x')
    })
  })
})
