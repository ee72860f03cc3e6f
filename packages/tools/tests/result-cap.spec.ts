/// <reference types="mocha" />
// Every tool result is capped where the registry executes it: a tool that returns 100 MB gives
// the model 100 KiB and a note, and the host does not keep the 100 MB.
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { expect } from 'chai'
import { Context } from 'cordis'
import { z } from 'zod'
import ToolRegistry, { DEFAULT_MAX_RESULT_BYTES, type ToolResult } from '@cordis-subagents/tools'
import { makeExec, makeTool, registering, setup } from './helpers.js'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

const MB = 1024 * 1024
const NOTE = /\n\[… cut (\d+) bytes of (\d+): the tool result cap is (\d+) bytes; ask the tool for a smaller part .*\]$/

/** A flat string of `bytes` ASCII bytes (what a file read or a JSON field gives; `repeat` builds a rope). */
function flat(bytes: number, char = 'x'): string {
  return Buffer.alloc(bytes, char).toString('latin1')
}

/** Heap plus external memory after GC: a large latin1 string from a Buffer lives outside the heap. */
function memoryAfterGc(): number {
  gc()
  gc()
  const { heapUsed, external } = process.memoryUsage()
  return heapUsed + external
}

describe('tool result cap (ctx.tools execute)', function () {
  this.timeout(60_000)
  let ctx: Context

  afterEach(async () => {
    await ctx?.stop()
  })

  it('cuts a 100 MB result to the default 100 KiB with a note, keeping metadata, usage, work and isError', async () => {
    ({ ctx } = await setup())
    const usage = { inputTokens: 7, outputTokens: 3 }
    const work = { steps: 2, toolCalls: 1, delegations: 0 }
    ctx.plugin(registering(makeTool('dump', {
      execute: () => ({ content: flat(100 * MB), isError: true, metadata: { path: '/big' }, usage, work }),
    })))
    await ctx.lifecycle.flush()
    const result = await ctx.tools.view().execute({ name: 'dump', input: { text: 'a' } }, makeExec())
    expect(Buffer.byteLength(result.content)).to.be.at.most(DEFAULT_MAX_RESULT_BYTES)
    expect(DEFAULT_MAX_RESULT_BYTES).to.equal(100 * 1024)
    const [, cut, total, cap] = NOTE.exec(result.content)!.map(Number)
    expect(total).to.equal(100 * MB)
    expect(cap).to.equal(DEFAULT_MAX_RESULT_BYTES)
    const head = result.content.slice(0, result.content.indexOf('\n[…'))
    expect(head).to.equal('x'.repeat(head.length))
    expect(head.length + cut!).to.equal(total)
    expect(head.length).to.be.above(DEFAULT_MAX_RESULT_BYTES - 300)
    expect(result).to.deep.include({ isError: true, metadata: { path: '/big' }, usage, work })
  })

  it('ten 32 MB results: the host keeps about 1 MB, not 320 MB', async () => {
    ({ ctx } = await setup())
    let n = 0
    ctx.plugin(registering(makeTool('dump', { execute: () => ({ content: flat(32 * MB, String.fromCharCode(65 + n++)) }) })))
    await ctx.lifecycle.flush()
    const view = ctx.tools.view()
    const before = memoryAfterGc()
    const kept: ToolResult[] = []
    // Held like a transcript holds them; one at a time, so the test itself never needs 320 MB at once.
    for (let i = 0; i < 10; i++) kept.push(await view.execute({ name: 'dump', input: { text: 'a' } }, makeExec()))
    const grown = memoryAfterGc() - before
    expect(kept.map((result) => result.content[0])).to.deep.equal([...'ABCDEFGHIJ'])
    // A kept slice of each original would retain all 320 MB; a fresh head retains ~1 MB.
    expect(grown).to.be.below(20 * MB)
  })

  it('cuts on a character boundary and counts UTF-8 bytes, not characters', async () => {
    ({ ctx } = await setup())
    const text = `${'é'.repeat(1000)}${'😀'.repeat(2000)}`
    ctx.plugin(registering(makeTool('emoji', { execute: () => ({ content: text }) })))
    await ctx.lifecycle.flush()
    for (const cap of [4096, 4097, 4098, 4099]) {
      const result = await ctx.tools.view(undefined, { maxResultBytes: cap }).execute({ name: 'emoji', input: { text: 'a' } }, makeExec())
      const head = result.content.slice(0, result.content.indexOf('\n[…'))
      expect(Buffer.byteLength(result.content), String(cap)).to.be.at.most(cap)
      expect(text.startsWith(head)).to.equal(true)
      expect(head).to.not.include('\uFFFD')
      const [, cut, total] = NOTE.exec(result.content)!.map(Number)
      expect(total).to.equal(Buffer.byteLength(text))
      expect(Buffer.byteLength(head) + cut!).to.equal(total)
    }
  })

  it('returns a result within the cap unchanged (the same object)', async () => {
    ({ ctx } = await setup())
    const result = { content: flat(DEFAULT_MAX_RESULT_BYTES), metadata: { a: 1 } }
    ctx.plugin(registering(makeTool('fits', { execute: () => result })))
    await ctx.lifecycle.flush()
    expect(await ctx.tools.view().execute({ name: 'fits', input: { text: 'a' } }, makeExec())).to.equal(result)
  })

  it('caps failures too: a tool that throws a 50 MB message', async () => {
    ({ ctx } = await setup())
    ctx.plugin(registering(makeTool('boom', { execute: () => { throw new Error(flat(50 * MB)) } })))
    await ctx.lifecycle.flush()
    const result = await ctx.tools.view().execute({ name: 'boom', input: { text: 'a' } }, makeExec())
    expect(result.isError).to.equal(true)
    expect(result.content).to.match(/^Tool "boom" failed: x+/).and.match(NOTE)
    expect(Buffer.byteLength(result.content)).to.be.at.most(DEFAULT_MAX_RESULT_BYTES)
  })

  it('takes maxResultBytes from the plugin config, and a view (or a restrict) can only lower it', async () => {
    ctx = new Context()
    ctx.plugin(ToolRegistry, { maxResultBytes: 8192 })
    await ctx.start()
    expect(ctx.tools.maxResultBytes).to.equal(8192)
    ctx.plugin(registering(makeTool('dump', { execute: () => ({ content: flat(MB) }) })))
    await ctx.lifecycle.flush()
    const size = async (view: ReturnType<Context['tools']['view']>) => {
      const result = await view.execute({ name: 'dump', input: { text: 'a' } }, makeExec())
      return Number(NOTE.exec(result.content)![3])
    }
    expect(await size(ctx.tools.view())).to.equal(8192)
    expect(await size(ctx.tools.view(undefined, { maxResultBytes: 65536 }))).to.equal(8192)
    const low = ctx.tools.view(undefined, { maxResultBytes: 2048 })
    expect(await size(low)).to.equal(2048)
    expect(await size(low.restrict({}))).to.equal(2048)
    expect(await size(low.restrict({}, { maxResultBytes: 65536 }))).to.equal(2048)
    expect(await size(ctx.tools.view().restrict({ deny: ['x'] }, { maxResultBytes: 4096 }))).to.equal(4096)
    expect(low.resultCap).to.equal(2048)
  })

  it('refuses a bad cap: the plugin fails at load, a view throws INVALID_CONFIG', async () => {
    ctx = new Context()
    const errors: unknown[] = []
    ctx.on('internal/error', (error) => { errors.push(error) })
    await ctx.start()
    for (const maxResultBytes of [100, Number.NaN, Infinity, -1, 1.5, '4096']) {
      const fork = ctx.plugin(ToolRegistry, { maxResultBytes } as never)
      await ctx.lifecycle.flush()
      expect(ctx.get('tools'), String(maxResultBytes)).to.equal(undefined)
      fork.dispose()
    }
    expect(errors.length).to.be.at.least(6)
    expect(String(errors[0])).to.include('maxResultBytes')
    expect(() => new ToolRegistry(new Context(), { maxResultBytes: Number.NaN })).to.throw(/maxResultBytes must be an integer from 1024/)
    const ok = ctx.plugin(ToolRegistry)
    await ctx.lifecycle.flush()
    for (const maxResultBytes of [10, Number.NaN, 2 ** 60]) {
      let code: unknown
      try {
        ctx.tools.view(undefined, { maxResultBytes })
      } catch (error) {
        code = (error as { code?: unknown }).code
      }
      expect(code, String(maxResultBytes)).to.equal('INVALID_CONFIG')
    }
    ok.dispose()
  })

  it('applies to every tool of the registry, whoever registered it (z.object tools of two plugins)', async () => {
    ({ ctx } = await setup())
    ctx.plugin(registering({ name: 'a', description: 'A.', input: z.object({}), execute: () => ({ content: flat(2 * MB) }) }))
    ctx.plugin(registering({ name: 'b', description: 'B.', input: z.object({}), execute: async () => ({ content: flat(3 * MB) }) }))
    await ctx.lifecycle.flush()
    for (const name of ['a', 'b']) {
      const result = await ctx.tools.view().execute({ name, input: {} }, makeExec())
      expect(Buffer.byteLength(result.content), name).to.be.at.most(DEFAULT_MAX_RESULT_BYTES)
    }
  })
})
