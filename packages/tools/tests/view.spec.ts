/// <reference types="mocha" />
import { expect } from 'chai'
import type { Context } from 'cordis'
import fc from 'fast-check'
import { z } from 'zod'
import type { ToolFilter } from '@cordis-subagents/shared'
import { ToolError, ToolView } from '@cordis-subagents/tools'
import { makeTool, setup } from './helpers.js'

describe('ctx.tools.view', () => {
  let ctx: Context

  beforeEach(async () => {
    ({ ctx } = await setup())
  })

  afterEach(async () => {
    await ctx.stop()
  })

  const visible = (view: ToolView) => view.list().map((spec) => spec.name).sort()

  describe('list()', () => {
    it('gives model-facing { name, description, parameters } with a JSON Schema object', () => {
      ctx.tools.register({
        name: 'search',
        description: 'Searches the web.',
        input: z.object({
          query: z.string().describe('What to look for'),
          limit: z.number().int().default(5),
          site: z.string().optional(),
        }),
        execute: () => ({ content: '' }),
      })
      const specs = ctx.tools.view().list()
      expect(specs).to.have.length(1)
      const [spec] = specs
      expect(Object.keys(spec).sort()).to.deep.equal(['description', 'name', 'parameters'])
      expect(spec.name).to.equal('search')
      expect(spec.description).to.equal('Searches the web.')
      expect(spec.parameters.type).to.equal('object')
      expect(spec.parameters).to.not.have.property('$schema')
      const properties = spec.parameters.properties as Record<string, Record<string, unknown>>
      expect(Object.keys(properties).sort()).to.deep.equal(['limit', 'query', 'site'])
      expect(properties.query).to.include({ type: 'string', description: 'What to look for' })
      expect(properties.limit).to.include({ type: 'integer', default: 5 })
      // the model may omit defaulted and optional fields
      expect(spec.parameters.required).to.deep.equal(['query'])
      expect(JSON.parse(JSON.stringify(spec))).to.deep.equal(spec)
    })

    it('returns frozen specs: editing a listed spec throws and does not change what views see', () => {
      ctx.tools.register(makeTool('a'))
      const [spec] = ctx.tools.view().list()
      expect(() => { spec.description = 'tampered' }).to.throw(TypeError)
      expect(() => { (spec.parameters.properties as Record<string, unknown>).extra = { type: 'string' } }).to.throw(TypeError)
      const [again] = ctx.tools.view().list()
      expect(again.description).to.equal('The a tool.')
      expect(Object.keys(again.parameters.properties as object)).to.deep.equal(['text'])
    })
  })

  describe('liveness', () => {
    it('a view sees tools added and removed after it was made', () => {
      const view = ctx.tools.view()
      const restricted = view.restrict({ allow: ['late', 'other'] })
      expect(visible(view)).to.deep.equal([])
      const dispose = ctx.tools.register(makeTool('late'))
      expect(visible(view)).to.deep.equal(['late'])
      expect(view.has('late')).to.equal(true)
      expect(restricted.has('late')).to.equal(true)
      dispose()
      expect(visible(view)).to.deep.equal([])
      expect(view.has('late')).to.equal(false)
      expect(restricted.has('late')).to.equal(false)
    })

    it('copies the filter: mutating the arrays afterwards does not widen the view', () => {
      for (const name of ['a', 'b', 'c']) ctx.tools.register(makeTool(name))
      const allow = ['a']
      const deny = ['b']
      const view = ctx.tools.view({ allow, deny })
      allow.push('b', 'c')
      deny.length = 0
      expect(visible(view)).to.deep.equal(['a'])
    })
  })

  describe('has()', () => {
    it('is true only for registered tools the view can see', () => {
      ctx.tools.register(makeTool('a'))
      ctx.tools.register(makeTool('b'))
      const view = ctx.tools.view({ deny: ['b'] })
      expect(view.has('a')).to.equal(true)
      expect(view.has('b')).to.equal(false)
      expect(view.has('missing')).to.equal(false)
      expect(ctx.tools.has('b')).to.equal(true)
    })
  })

  describe('filters', () => {
    beforeEach(() => {
      for (const name of ['a', 'b', 'c', 'd']) ctx.tools.register(makeTool(name))
    })

    it('allow keeps only the listed names', () => {
      expect(visible(ctx.tools.view({ allow: ['a', 'c', 'zzz'] }))).to.deep.equal(['a', 'c'])
    })

    it('an empty allow list hides everything', () => {
      expect(visible(ctx.tools.view({ allow: [] }))).to.deep.equal([])
    })

    it('deny hides the listed names', () => {
      expect(visible(ctx.tools.view({ deny: ['b', 'd'] }))).to.deep.equal(['a', 'c'])
    })

    it('deny wins over allow in the same filter', () => {
      expect(visible(ctx.tools.view({ allow: ['a', 'b'], deny: ['b'] }))).to.deep.equal(['a'])
    })

    it('no filter (or an empty object) sees everything', () => {
      expect(visible(ctx.tools.view())).to.deep.equal(['a', 'b', 'c', 'd'])
      expect(visible(ctx.tools.view({}))).to.deep.equal(['a', 'b', 'c', 'd'])
      expect(visible(ctx.tools.view().restrict({}))).to.deep.equal(['a', 'b', 'c', 'd'])
    })

    it('restrict intersects: allow [a,b] then allow [b,c] sees only b', () => {
      const view = ctx.tools.view().restrict({ allow: ['a', 'b'] }).restrict({ allow: ['b', 'c'] })
      expect(visible(view)).to.deep.equal(['b'])
      expect(view.has('c')).to.equal(false)
    })

    it('a child cannot re-allow what its parent denies', () => {
      const parent = ctx.tools.view({ deny: ['a'] })
      expect(visible(parent.restrict({ allow: ['a', 'b'] }))).to.deep.equal(['b'])
    })

    it('restrict leaves the parent view unchanged', () => {
      const parent = ctx.tools.view({ allow: ['a', 'b', 'c'] })
      parent.restrict({ allow: ['a'] })
      expect(visible(parent)).to.deep.equal(['a', 'b', 'c'])
    })

    it('an invalid filter throws ToolError INVALID_FILTER', () => {
      const bad: unknown[] = ['a', 42, { allow: 'a' }, { deny: [1] }, { allow: [null] }, { deny: {} }]
      for (const filter of bad) {
        expect(() => ctx.tools.view(filter as ToolFilter), JSON.stringify(filter))
          .to.throw(ToolError).with.property('code', 'INVALID_FILTER')
        expect(() => ctx.tools.view().restrict(filter as ToolFilter), JSON.stringify(filter))
          .to.throw(ToolError).with.property('code', 'INVALID_FILTER')
      }
    })
  })

  describe('capability ceiling (property)', () => {
    const universe = ['a', 'b', 'c', 'd', 'e', 'f']
    const nameArb = fc.constantFrom(...universe, 'ghost')
    const filterArb: fc.Arbitrary<ToolFilter> = fc.record(
      { allow: fc.array(nameArb, { maxLength: 7 }), deny: fc.array(nameArb, { maxLength: 7 }) },
      { requiredKeys: [] },
    )

    it('a restricted view never sees more than its parent, and sees exactly parent ∩ filter', () => {
      for (const name of universe) ctx.tools.register(makeTool(name))
      fc.assert(fc.property(fc.option(filterArb, { nil: undefined }), fc.array(filterArb, { maxLength: 5 }), (root, chain) => {
        let view = ctx.tools.view(root)
        let seen = new Set(visible(view))
        for (const filter of chain) {
          const child = view.restrict(filter)
          const childSeen = new Set(visible(child))
          const expected = [...seen].filter((name) =>
            (!filter.allow || filter.allow.includes(name)) && !(filter.deny ?? []).includes(name))
          expect([...childSeen].sort()).to.deep.equal(expected.sort())
          for (const name of [...universe, 'ghost']) {
            if (child.has(name)) expect(view.has(name), name).to.equal(true)
          }
          view = child
          seen = childSeen
        }
      }), { numRuns: 300 })
    })
  })
})
