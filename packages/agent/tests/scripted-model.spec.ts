/// <reference types="mocha" />
import { expect } from 'chai'
import type { Context } from 'cordis'
import { ScriptedModel, type GenerateRequest } from '@cordis-subagents/agent'
import { deferred, makeTool, setup, toolPlugin } from './helpers.js'

function request(overrides: Partial<GenerateRequest> = {}): GenerateRequest {
  return { messages: [{ role: 'user', content: 'hi' }], tools: [], signal: new AbortController().signal, ...overrides }
}

describe('ScriptedModel', () => {
  describe('on its own', () => {
    it('a list script answers one reply per call, in order, normalised to a full response', async () => {
      const model = new ScriptedModel([
        { text: 'one' },
        { toolCalls: [{ name: 'echo', input: { text: 'x' } }, { id: 'mine', name: 'echo', input: {} }] },
        { text: 'cut', finishReason: 'length', usage: { inputTokens: 1, outputTokens: 2 }, diagnostic: 'why' },
      ])
      expect(await model.generate(request())).to.deep.equal({ text: 'one', toolCalls: [], finishReason: 'stop' })
      expect(await model.generate(request())).to.deep.equal({
        text: '',
        toolCalls: [{ id: 'call_1_0', name: 'echo', input: { text: 'x' } }, { id: 'mine', name: 'echo', input: {} }],
        finishReason: 'tool-calls',
      })
      expect(await model.generate(request())).to.deep.equal({
        text: 'cut', toolCalls: [], finishReason: 'length', usage: { inputTokens: 1, outputTokens: 2 }, diagnostic: 'why',
      })
      expect(model.callCount).to.equal(3)
    })

    it('an exhausted list script rejects with a clear message', async () => {
      const model = new ScriptedModel([{ text: 'only' }])
      await model.generate(request())
      let error: unknown
      try {
        await model.generate(request())
      } catch (caught) {
        error = caught
      }
      expect(error).to.be.instanceOf(Error)
      expect((error as Error).message).to.equal('ScriptedModel: the script has 1 replies and reply 2 was requested.')
    })

    it('a function script receives the request and the call index, and may be async', async () => {
      const seen: [string, number][] = []
      const model = new ScriptedModel(async (req, index) => {
        seen.push([String(req.messages.at(-1)!.content), index])
        return { text: `reply ${index}` }
      })
      expect((await model.generate(request())).text).to.equal('reply 0')
      expect((await model.generate(request({ messages: [{ role: 'user', content: 'again' }] }))).text).to.equal('reply 1')
      expect(seen).to.deep.equal([['hi', 0], ['again', 1]])
    })

    it('a list may mix fixed replies and functions', async () => {
      const model = new ScriptedModel([{ text: 'fixed' }, (_, index) => ({ text: `computed ${index}` })])
      expect((await model.generate(request())).text).to.equal('fixed')
      expect((await model.generate(request())).text).to.equal('computed 1')
    })

    it('records every request, as a copy that later transcript changes do not touch', async () => {
      const model = new ScriptedModel(() => ({ text: 'ok' }))
      const messages = [{ role: 'user' as const, content: 'first' }]
      await model.generate(request({ messages, system: 'persona', modelId: 'x', maxTokens: 5 }))
      messages.push({ role: 'user', content: 'second' })
      messages[0].content = 'edited'
      expect(model.requests).to.have.length(1)
      expect(model.requests[0]).to.include({ system: 'persona', modelId: 'x', maxTokens: 5 })
      expect(model.requests[0].messages).to.deep.equal([{ role: 'user', content: 'first' }])
    })

    it('the default usage option applies to replies without their own usage', async () => {
      const model = new ScriptedModel([{ text: 'a' }, { text: 'b', usage: { inputTokens: 9, outputTokens: 9 } }], {
        usage: { inputTokens: 1, outputTokens: 1 },
      })
      expect((await model.generate(request())).usage).to.deep.equal({ inputTokens: 1, outputTokens: 1 })
      expect((await model.generate(request())).usage).to.deep.equal({ inputTokens: 9, outputTokens: 9 })
    })

    it('text() and call() build replies', () => {
      expect(ScriptedModel.text('hi')).to.deep.equal({ text: 'hi' })
      expect(ScriptedModel.text('hi', { inputTokens: 1, outputTokens: 2 })).to.deep.equal({ text: 'hi', usage: { inputTokens: 1, outputTokens: 2 } })
      expect(ScriptedModel.call('echo', { text: 'x' })).to.deep.equal({ toolCalls: [{ name: 'echo', input: { text: 'x' } }] })
      expect(ScriptedModel.call('echo', {}, 'id1')).to.deep.equal({ toolCalls: [{ name: 'echo', input: {}, id: 'id1' }] })
    })

    it('rejects with the abort reason when the signal is already aborted, and when it aborts during a function reply', async () => {
      const model = new ScriptedModel(() => new Promise(() => {}))
      const pre = new AbortController()
      pre.abort('early')
      let error: unknown
      try { await model.generate(request({ signal: pre.signal })) } catch (caught) { error = caught }
      expect(error).to.equal('early')

      const during = new AbortController()
      const pending = model.generate(request({ signal: during.signal }))
      during.abort('late')
      error = undefined
      try { await pending } catch (caught) { error = caught }
      expect(error).to.equal('late')
    })
  })

  describe('driving an agent', () => {
    let ctx: Context

    beforeEach(async () => {
      ({ ctx } = await setup())
    })

    afterEach(async () => {
      await ctx.stop()
    })

    it('an exhausted script ends the run with error and a diagnostic that says so', async () => {
      ctx.plugin(toolPlugin(makeTool('echo')))
      await ctx.lifecycle.flush()
      ctx.agents.registerModel('scripted', new ScriptedModel([ScriptedModel.call('echo', { text: 'x' })]))
      const result = await ctx.agents.create({ model: 'scripted' }).run('go')
      expect(result.stopReason).to.equal('error')
      expect(result.diagnostic).to.include('the script has 1 replies and reply 2 was requested')
      expect(result.steps).to.equal(2)
    })

    it('a function script that waits can be aborted through the run signal', async () => {
      const called = deferred()
      ctx.agents.registerModel('scripted', new ScriptedModel(() => { called.resolve(); return new Promise(() => {}) }))
      const controller = new AbortController()
      const running = ctx.agents.create({ model: 'scripted' }).run('go', { signal: controller.signal })
      await called.promise
      controller.abort('cancelled by test')
      expect(await running).to.include({ stopReason: 'aborted', diagnostic: 'Aborted: cancelled by test' })
    })

    it('sees each step\'s transcript, so a function script can answer from tool results', async () => {
      ctx.plugin(toolPlugin(makeTool('echo')))
      await ctx.lifecycle.flush()
      const model = new ScriptedModel((req) => {
        const last = req.messages.at(-1)!
        return last.role === 'tool' ? { text: `got ${last.content}` } : ScriptedModel.call('echo', { text: last.content })
      })
      ctx.agents.registerModel('scripted', model)
      const result = await ctx.agents.create({ model: 'scripted' }).run('ping')
      expect(result.text).to.equal('got echo:ping')
      expect(model.requests.map((req) => req.messages.length)).to.deep.equal([1, 3])
    })
  })
})
