/// <reference types="mocha" />
import { resolve } from 'node:path'
import { expect } from 'chai'
import { Context } from 'cordis'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime, { Agent, AgentError, ScriptedModel, type ChatModel, type Message } from '@cordis-subagents/agent'
import { FAILED, makeTool, modelPlugin, setup, toolPlugin } from './helpers.js'

describe('ctx.agents runtime', () => {
  let ctx: Context
  let errors: unknown[]

  afterEach(async () => {
    await ctx?.stop()
  })

  describe('loader shape', () => {
    it('the package default export is the AgentRuntime service class with inject and Config', async () => {
      const entry = await import('@cordis-subagents/agent')
      expect(entry.default).to.equal(AgentRuntime)
      expect(entry.default).to.be.a('function')
      expect(entry.default.prototype).to.be.an('object')
      expect(entry.default.inject).to.include('tools')
      expect(entry.default.Config).to.be.a('function')
      // The schema resolves an empty config to the documented defaults.
      expect(entry.default.Config({})).to.deep.equal({
        maxSteps: 25, depth: 0, maxToolCallsPerStep: 32, budget: {}, models: {}, maxQueuedModelCalls: 10_000,
        rateLimit: {
          enabled: true, maxRetries: 8, maxWaitMs: 300_000, maxRetryAfterMs: 60_000, backoffMs: 1000, maxJitterMs: 1000, recoverAfter: 4,
        },
      })
    })

    it('loaded as a plugin it provides ctx.agents once ctx.tools exists', async () => {
      ctx = new Context()
      ctx.plugin(AgentRuntime)
      await ctx.start()
      expect(ctx.get('agents')).to.equal(undefined)
      ctx.plugin(ToolRegistry)
      await ctx.lifecycle.flush()
      expect(ctx.get('agents')).to.be.instanceOf(AgentRuntime)
    })

    it('ctx.agents goes away with ctx.tools and comes back with it', async () => {
      ctx = new Context()
      const tools = ctx.plugin(ToolRegistry)
      ctx.plugin(AgentRuntime)
      await ctx.start()
      expect(ctx.get('agents')).to.be.instanceOf(AgentRuntime)
      tools.dispose()
      expect(ctx.get('agents')).to.equal(undefined)
      ctx.plugin(ToolRegistry)
      await ctx.lifecycle.flush()
      expect(ctx.get('agents')).to.be.instanceOf(AgentRuntime)
    })
  })

  describe('config', () => {
    const invalid: [string, Record<string, unknown>][] = [
      ['maxSteps', { maxSteps: 0 }],
      ['maxSteps', { maxSteps: 'x' }],
      ['maxSteps', { maxSteps: 2.5 }],
      ['depth', { depth: -1 }],
      ['cwd', { cwd: 5 }],
      ['model', { model: 7 }],
      ['maxModelCallsInFlight', { maxModelCallsInFlight: 0 }],
      ['maxInFlight', { models: { m: { maxInFlight: 0 } } }],
      ['models', { models: { 'a:b': { maxInFlight: 1 } } }],
      ['maxQueuedModelCalls', { maxQueuedModelCalls: 0 }],
    ]
    for (const [key, config] of invalid) {
      it(`${JSON.stringify(config)} fails the plugin at load, naming ${key}; the app keeps running`, async () => {
        ctx = new Context()
        errors = []
        ctx.on('internal/error', (error) => { errors.push(error) })
        ctx.plugin(ToolRegistry)
        const fork = ctx.plugin(AgentRuntime, config as AgentRuntime.Config)
        await ctx.start()
        await ctx.lifecycle.flush()
        expect(fork.status).to.equal(FAILED)
        expect(errors).to.have.length(1)
        expect(String((errors[0] as Error).message)).to.include(key)
        expect(ctx.get('agents')).to.equal(undefined)
        // The rest of the app is unaffected: other plugins still load and work.
        ctx.plugin(toolPlugin(makeTool('still_works')))
        await ctx.lifecycle.flush()
        expect(ctx.tools.has('still_works')).to.equal(true)
      })
    }

    it('fixing the config of a failed load makes the service available', async () => {
      ctx = new Context()
      ctx.on('internal/error', () => {})
      ctx.plugin(ToolRegistry)
      const fork = ctx.plugin(AgentRuntime, { maxSteps: 0 })
      await ctx.start()
      expect(fork.status).to.equal(FAILED)
      fork.dispose()
      ctx.plugin(AgentRuntime, { maxSteps: 3 })
      await ctx.lifecycle.flush()
      expect(ctx.agents.create().maxSteps).to.equal(3)
    })

    it('defaults: maxSteps 25, cwd the process cwd, depth 0, no persona, no maxTokens', async () => {
      ({ ctx, errors } = await setup())
      const agent = ctx.agents.create()
      expect(agent.maxSteps).to.equal(25)
      expect(agent.cwd).to.equal(process.cwd())
      expect(agent.depth).to.equal(0)
      expect(agent.persona).to.equal(undefined)
      expect(agent.maxTokens).to.equal(undefined)
      expect(agent.model).to.equal(undefined)
      expect(errors).to.deep.equal([])
    })

    it('configured values reach the agents: maxSteps, maxTokens, persona, model, cwd (resolved), depth', async () => {
      // The cwd must exist (checked at load; cwd-config.spec.ts): a relative one resolves against ctx.baseDir, the process cwd here.
      ({ ctx, errors } = await setup({ maxSteps: 4, maxTokens: 99, persona: 'Be brief.', model: 'm:big', cwd: 'packages/agent', depth: 2 }))
      const agent = ctx.agents.create()
      expect(agent.maxSteps).to.equal(4)
      expect(agent.maxTokens).to.equal(99)
      expect(agent.persona).to.equal('Be brief.')
      expect(agent.model).to.equal('m:big')
      expect(agent.cwd).to.equal(resolve(process.cwd(), 'packages/agent'))
      expect(agent.depth).to.equal(2)
    })

    it('the configured maxTokens and default model are what the model receives', async () => {
      ({ ctx, errors } = await setup({ maxTokens: 77, model: 'm:tiny' }))
      const model = new ScriptedModel([{ text: 'ok' }])
      ctx.plugin(modelPlugin('m', model))
      await ctx.lifecycle.flush()
      const result = await ctx.agents.create().run('hi')
      expect(result.stopReason).to.equal('completed')
      expect(model.requests[0].maxTokens).to.equal(77)
      expect(model.requests[0].modelId).to.equal('tiny')
    })
  })

  describe('registerModel', () => {
    beforeEach(async () => {
      ({ ctx, errors } = await setup())
    })

    it('is bound to the registering plugin: disposing it removes the model', async () => {
      const fork = ctx.plugin(modelPlugin('m', new ScriptedModel([{ text: 'a' }])))
      await ctx.lifecycle.flush()
      expect(ctx.agents.modelNames()).to.deep.equal(['m'])
      fork.dispose()
      expect(ctx.agents.modelNames()).to.deep.equal([])
      const result = await ctx.agents.create({ model: 'm' }).run('hi')
      expect(result.stopReason).to.equal('error')
      expect(result.diagnostic).to.include('Unknown model "m"')
    })

    it('reloading the registering plugin replaces the model', async () => {
      const plugin = {
        name: 'versioned-model',
        inject: ['agents'],
        apply(ctx: Context, config: { version: number }) {
          ctx.agents.registerModel('m', new ScriptedModel(() => ({ text: `v${config.version}` })))
        },
      }
      const fork = ctx.plugin(plugin, { version: 1 })
      await ctx.lifecycle.flush()
      expect((await ctx.agents.create({ model: 'm' }).run('hi')).text).to.equal('v1')
      fork.update({ version: 2 })
      await ctx.lifecycle.flush()
      expect(ctx.agents.modelNames()).to.deep.equal(['m'])
      expect((await ctx.agents.create({ model: 'm' }).run('hi')).text).to.equal('v2')
      expect(errors).to.deep.equal([])
    })

    it('the returned dispose removes the model and is idempotent', () => {
      const first = new ScriptedModel([])
      const dispose = ctx.agents.registerModel('m', first)
      dispose()
      dispose()
      expect(ctx.agents.modelNames()).to.deep.equal([])
      // A stale dispose must not remove a later registration under the same name.
      ctx.agents.registerModel('m', new ScriptedModel([]))
      dispose()
      expect(ctx.agents.modelNames()).to.deep.equal(['m'])
    })

    it('a taken name throws DUPLICATE_MODEL and fails only the second plugin', async () => {
      ctx.plugin(modelPlugin('m', new ScriptedModel([{ text: 'first' }])))
      const second = ctx.plugin(modelPlugin('m', new ScriptedModel([{ text: 'second' }])))
      await ctx.lifecycle.flush()
      // An object plugin applies in its runtime scope: that is the one that fails.
      expect(second.runtime.status).to.equal(FAILED)
      expect(errors).to.have.length(1)
      expect(errors[0]).to.be.instanceOf(AgentError).with.property('code', 'DUPLICATE_MODEL')
      expect((errors[0] as Error).message).to.include('"m"')
      expect((await ctx.agents.create({ model: 'm' }).run('hi')).text).to.equal('first')
      expect(() => ctx.agents.registerModel('m', new ScriptedModel([])))
        .to.throw(AgentError).with.property('code', 'DUPLICATE_MODEL')
    })

    it('the name is free again once its owner is disposed', async () => {
      const first = ctx.plugin(modelPlugin('m', new ScriptedModel([{ text: 'first' }])))
      await ctx.lifecycle.flush()
      first.dispose()
      ctx.plugin(modelPlugin('m', new ScriptedModel([{ text: 'second' }])))
      await ctx.lifecycle.flush()
      expect((await ctx.agents.create({ model: 'm' }).run('hi')).text).to.equal('second')
      expect(errors).to.deep.equal([])
    })

    const badNames: unknown[] = ['', 'a:b', 'has space', 'x'.repeat(65), 42, undefined, null]
    for (const name of badNames) {
      it(`rejects the model name ${JSON.stringify(name)?.slice(0, 20) ?? String(name)} with INVALID_MODEL`, () => {
        expect(() => ctx.agents.registerModel(name as string, new ScriptedModel([])))
          .to.throw(AgentError).with.property('code', 'INVALID_MODEL')
        expect(ctx.agents.modelNames()).to.deep.equal([])
      })
    }

    it('accepts names with letters, digits, "_", ".", "-" and "/"', () => {
      for (const name of ['a', 'gpt-4.1', 'openai/gpt_4o', 'x'.repeat(64)]) ctx.agents.registerModel(name, new ScriptedModel([]))
      expect(ctx.agents.modelNames()).to.have.length(4)
    })

    it('rejects a model without generate() with INVALID_MODEL', () => {
      for (const model of [null, undefined, {}, { generate: 'no' }]) {
        expect(() => ctx.agents.registerModel('m', model as unknown as ChatModel))
          .to.throw(AgentError, /generate/).with.property('code', 'INVALID_MODEL')
      }
      expect(ctx.agents.modelNames()).to.deep.equal([])
    })

    it('a `name:modelId` ref passes modelId to generate; a bare name passes none', async () => {
      const model = new ScriptedModel(() => ({ text: 'ok' }))
      ctx.agents.registerModel('m', model)
      await ctx.agents.create({ model: 'm:gpt-4o-mini' }).run('a')
      await ctx.agents.create({ model: 'm' }).run('b')
      await ctx.agents.create({ model: 'm:org/model:v2' }).run('c')
      expect(model.requests.map((request) => request.modelId)).to.deep.equal(['gpt-4o-mini', undefined, 'org/model:v2'])
    })

    it('an unknown model ref ends the run with error and a diagnostic naming the registered models', async () => {
      ctx.agents.registerModel('alpha', new ScriptedModel([]))
      ctx.agents.registerModel('beta', new ScriptedModel([]))
      const agent = ctx.agents.create({ model: 'gamma:x' })
      const result = await agent.run('hi')
      expect(result.stopReason).to.equal('error')
      expect(result.diagnostic).to.include('gamma:x')
      expect(result.diagnostic).to.include('alpha')
      expect(result.diagnostic).to.include('beta')
      expect(result.text).to.equal('')
      expect(result.steps).to.equal(0)
      // The turn still ended: the transcript holds the prompt as a completed turn.
      expect(agent.transcript.completedMessages()).to.deep.equal([{ role: 'user', content: 'hi' }])
      expect(agent.running).to.equal(false)
    })

    it('with no models at all the diagnostic says so', async () => {
      const result = await ctx.agents.create({ model: 'nope' }).run('hi')
      expect(result.stopReason).to.equal('error')
      expect(result.diagnostic).to.include('(none)')
    })

    it('no ref and no configured default: the only registered model is used, two are ambiguous', async () => {
      ctx.agents.registerModel('solo', new ScriptedModel(() => ({ text: 'solo answer' })))
      expect((await ctx.agents.create().run('hi')).text).to.equal('solo answer')
      ctx.agents.registerModel('other', new ScriptedModel([]))
      const result = await ctx.agents.create().run('hi')
      expect(result.stopReason).to.equal('error')
      expect(result.diagnostic).to.include('solo').and.include('other')
    })

    it('the model is resolved when a run starts, so a model registered after create is found', async () => {
      const agent = ctx.agents.create({ model: 'late' })
      ctx.agents.registerModel('late', new ScriptedModel([{ text: 'here' }]))
      expect((await agent.run('hi')).text).to.equal('here')
    })
  })

  describe('create', () => {
    beforeEach(async () => {
      ({ ctx, errors } = await setup())
    })

    it('gives every agent a unique id, prefixed by its label', () => {
      const ids = new Set<string>()
      for (let i = 0; i < 50; i++) ids.add(ctx.agents.create(i % 2 ? { label: 'worker' } : {}).id)
      expect(ids.size).to.equal(50)
      const labelled = ctx.agents.create({ label: 'reviewer' })
      expect(labelled.id).to.match(/^reviewer-/)
      expect(labelled.label).to.equal('reviewer')
    })

    it('a child has depth parent.depth + 1 and keeps a reference to its parent', () => {
      const root = ctx.agents.create()
      const child = ctx.agents.create({ parent: root })
      const grandchild = ctx.agents.create({ parent: child })
      expect(root.parent).to.equal(undefined)
      expect([root.depth, child.depth, grandchild.depth]).to.deep.equal([0, 1, 2])
      expect(grandchild.parent).to.equal(child)
      expect(child.parent).to.equal(root)
    })

    it('a child inherits cwd, model and tools from its parent unless it sets its own', () => {
      ctx.tools.register(makeTool('a'))
      ctx.tools.register(makeTool('b'))
      const root = ctx.agents.create({ cwd: '/tmp/root', model: 'parent-model', tools: ctx.tools.view({ deny: ['b'] }) })
      const child = ctx.agents.create({ parent: root })
      expect(child.cwd).to.equal('/tmp/root')
      expect(child.model).to.equal('parent-model')
      // The parent's view as an agent at depth 1 sees it: the parent's filter, live.
      expect(child.tools).to.equal(root.tools.forDepth(1))
      expect(child.tools.names()).to.deep.equal(['a'])
      const own = ctx.agents.create({ parent: root, cwd: '/tmp/child', model: 'child-model', tools: root.tools.restrict({ allow: [] }) })
      expect(own.cwd).to.equal('/tmp/child')
      expect(own.model).to.equal('child-model')
      expect(own.tools.names()).to.deep.equal([])
    })

    it('persona: an explicit persona, else the deployment persona; never the parent\'s persona', async () => {
      await ctx.stop()
      ;({ ctx, errors } = await setup({ persona: 'Deployment persona.' }))
      const root = ctx.agents.create({ persona: 'Root persona.' })
      expect(root.persona).to.equal('Root persona.')
      expect(ctx.agents.create().persona).to.equal('Deployment persona.')
      expect(ctx.agents.create({ parent: root }).persona).to.equal('Deployment persona.')
      expect(ctx.agents.create({ parent: root, persona: 'Child persona.' }).persona).to.equal('Child persona.')
    })

    it('the cwd option is resolved to an absolute path', () => {
      expect(ctx.agents.create({ cwd: 'rel' }).cwd).to.equal(resolve('rel'))
      const root = ctx.agents.create({ cwd: '/abs/root' })
      expect(ctx.agents.create({ parent: root, cwd: 'nested' }).cwd).to.equal(resolve('nested'))
    })

    it('the default tool view is live: tools registered later are visible, removed ones vanish', async () => {
      const agent = ctx.agents.create()
      expect(agent.tools.names()).to.deep.equal([])
      const fork = ctx.plugin(toolPlugin(makeTool('later')))
      await ctx.lifecycle.flush()
      expect(agent.tools.names()).to.deep.equal(['later'])
      fork.dispose()
      expect(agent.tools.names()).to.deep.equal([])
    })

    it('a seed becomes the completed part of the transcript (copied, not shared)', async () => {
      const seed: Message[] = [
        { role: 'user', content: 'earlier question' },
        { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'a', input: { text: 'x' } }] },
        { role: 'tool', toolCallId: 'c1', name: 'a', content: 'a:x' },
        { role: 'assistant', content: 'earlier answer' },
      ]
      const agent = ctx.agents.create({ seed })
      ;(seed[1] as { toolCalls: { id: string }[] }).toolCalls[0].id = 'mutated'
      seed.push({ role: 'user', content: 'added later' })
      expect(agent.transcript.messages).to.have.length(4)
      expect(agent.transcript.completedMessages()[1]).to.deep.include({ toolCalls: [{ id: 'c1', name: 'a', input: { text: 'x' } }] })
      const model = new ScriptedModel([{ text: 'new answer' }])
      ctx.agents.registerModel('m', model)
      const result = await ctx.agents.create({ seed: agent.transcript.completedMessages(), model: 'm' }).run('new question')
      expect(result.text).to.equal('new answer')
      expect(model.requests[0].messages.map((message) => message.content)).to.deep.equal([
        'earlier question', '', 'a:x', 'earlier answer', 'new question',
      ])
    })

    it('maxSteps: the option overrides the config; an invalid value throws INVALID_OPTIONS', () => {
      expect(ctx.agents.create({ maxSteps: 3 }).maxSteps).to.equal(3)
      for (const maxSteps of [0, -1, 1.5, Number.NaN, '3']) {
        expect(() => ctx.agents.create({ maxSteps: maxSteps as number }))
          .to.throw(AgentError, /maxSteps/).with.property('code', 'INVALID_OPTIONS')
      }
    })

    it('options of the wrong type throw INVALID_OPTIONS naming the option', () => {
      const bad: [string, unknown][] = [
        ['model', 42], ['persona', {}], ['cwd', 1], ['label', true], ['maxTokens', 0], ['maxTokens', 2.5],
        ['tools', { allow: ['a'] }], ['seed', 'text'], ['seed', [{ role: 'system', content: 'x' }]], ['seed', [{ role: 'user' }]],
      ]
      for (const [key, value] of bad) {
        expect(() => ctx.agents.create({ [key]: value }), key)
          .to.throw(AgentError, new RegExp(`options\\.${key}`)).with.property('code', 'INVALID_OPTIONS')
      }
      expect(() => ctx.agents.create(null as never)).to.throw(AgentError).with.property('code', 'INVALID_OPTIONS')
    })

    it('a parent that is not an Agent throws INVALID_OPTIONS', () => {
      expect(() => ctx.agents.create({ parent: { id: 'x', depth: 0 } as unknown as Agent }))
        .to.throw(AgentError, /parent/).with.property('code', 'INVALID_OPTIONS')
    })

    it('a fresh agent has zero usage and an empty transcript', () => {
      const agent = ctx.agents.create()
      expect(agent.usage.own).to.deep.equal({ inputTokens: 0, outputTokens: 0 })
      expect(agent.usage.delegated).to.deep.equal({ inputTokens: 0, outputTokens: 0 })
      expect(agent.usage.total).to.deep.equal({ inputTokens: 0, outputTokens: 0 })
      expect(agent.transcript.messages).to.deep.equal([])
      expect(agent.running).to.equal(false)
      expect(agent.disposed).to.equal(false)
    })
  })

  describe('root depth and SUBAGENT_DEPTH', () => {
    let saved: string | undefined

    beforeEach(() => {
      saved = process.env.SUBAGENT_DEPTH
    })

    afterEach(() => {
      if (saved === undefined) delete process.env.SUBAGENT_DEPTH
      else process.env.SUBAGENT_DEPTH = saved
    })

    it('root depth comes from config depth when SUBAGENT_DEPTH is unset', async () => {
      delete process.env.SUBAGENT_DEPTH
      ;({ ctx, errors } = await setup({ depth: 3 }))
      const root = ctx.agents.create()
      expect(root.depth).to.equal(3)
      expect(ctx.agents.create({ parent: root }).depth).to.equal(4)
    })

    it('SUBAGENT_DEPTH overrides the configured depth', async () => {
      process.env.SUBAGENT_DEPTH = '5'
      ;({ ctx, errors } = await setup({ depth: 3 }))
      const root = ctx.agents.create()
      expect(root.depth).to.equal(5)
      expect(ctx.agents.create({ parent: root }).depth).to.equal(6)
    })

    it('SUBAGENT_DEPTH=0 is honoured (not mistaken for unset)', async () => {
      process.env.SUBAGENT_DEPTH = '0'
      ;({ ctx, errors } = await setup({ depth: 3 }))
      expect(ctx.agents.create().depth).to.equal(0)
    })

    for (const value of ['abc', '-1', '1.5', '', ' ', '0x2', '1e1', '2 levels']) {
      it(`an invalid SUBAGENT_DEPTH=${JSON.stringify(value)} is ignored and the config depth is used`, async () => {
        process.env.SUBAGENT_DEPTH = value
        ;({ ctx, errors } = await setup({ depth: 2 }))
        expect(ctx.agents.create().depth).to.equal(2)
        expect(errors).to.deep.equal([])
      })
    }
  })
})
