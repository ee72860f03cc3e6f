/// <reference types="mocha" />
import { expect } from 'chai'
import type { Context } from 'cordis'
import { z } from 'zod'
import { makeExec, makeTool, registering, setup } from './helpers.js'

describe('ctx.tools: a tool with its own JSON Schema (parameters)', () => {
  let ctx: Context
  let errors: unknown[]

  beforeEach(async () => {
    ({ ctx, errors } = await setup())
  })

  afterEach(async () => {
    await ctx.stop()
  })

  it('models see the given schema (without $schema), and input still validates every call', async () => {
    const parameters = {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: { path: { type: 'string', description: 'A file.' } },
      required: ['path'],
    }
    ctx.plugin(registering(makeTool('read', {
      input: z.looseObject({ path: z.string() }),
      parameters,
      execute: (input: { path: string }) => ({ content: `read ${input.path}` }),
    } as never)))
    await ctx.lifecycle.flush()
    const [spec] = ctx.tools.list()
    expect(spec.parameters).to.deep.equal({ type: 'object', properties: parameters.properties, required: ['path'] })
    expect(Object.isFrozen(spec.parameters)).to.equal(true)
    expect(Object.isFrozen(parameters)).to.equal(false)
    expect(await ctx.tools.view().execute({ name: 'read', input: { path: 'a' } }, makeExec())).to.deep.equal({ content: 'read a' })
    const invalid = await ctx.tools.view().execute({ name: 'read', input: { path: 1 } }, makeExec())
    expect(invalid.isError).to.equal(true)
    expect(invalid.content).to.match(/Invalid input for tool "read"/)
    expect(errors).to.deep.equal([])
  })

  for (const [label, parameters] of [['an array', []], ['a non-object schema', { type: 'string' }], ['null', null]] as const) {
    it(`a tool whose parameters are ${label} fails to register with INVALID_TOOL`, () => {
      expect(() => ctx.tools.register(makeTool('bad', { parameters } as never))).to.throw(/not a JSON Schema object/)
        .with.property('code', 'INVALID_TOOL')
    })
  }
})
