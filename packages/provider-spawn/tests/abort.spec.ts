/// <reference types="mocha" />
import { expect } from 'chai'
import { z } from 'zod'
import * as Spawn from '@cordis-subagents/provider-spawn'
import { Agent } from '@cordis-subagents/agent'
import { type ProviderStartRequest, SubagentError } from '@cordis-subagents/subagents-service'
import type { Tool } from '@cordis-subagents/tools'
import {
  type Harness, agentsCreated, deferred, delegation, hang, loadTool, probeTool, routed, setup, tick, until,
} from './helpers.js'

/** A tool that runs until its signal aborts (or forever, when `honourAbort` is false, until released). */
interface SlowToolState {
  started: ReturnType<typeof deferred<AbortSignal>>
  release: ReturnType<typeof deferred>
  settled: boolean
}

function slowTool(state: SlowToolState, honourAbort: boolean): Tool<z.ZodObject> {
  return {
    name: 'slow',
    description: 'Takes its time.',
    input: z.object({}),
    execute: async (_input, exec) => {
      state.started.resolve(exec.signal)
      try {
        if (honourAbort) {
          await new Promise<void>((resolve) => exec.signal.addEventListener('abort', () => resolve(), { once: true }))
          return { isError: true, content: 'slow: stopped' }
        }
        await state.release.promise
        return { content: 'slow: finished' }
      } finally {
        state.settled = true
      }
    },
  }
}

function slowState() {
  return { started: deferred<AbortSignal>(), release: deferred(), settled: false }
}

describe('provider-spawn: abort, dispose and unload', () => {
  let h: Harness | undefined

  afterEach(async () => {
    await h?.ctx.stop()
    h = undefined
  })

  async function load(model: ReturnType<typeof routed>, tools: Tool<any>[] = []) {
    h = await setup({ models: { main: model }, tools })
    const provider = h.ctx.plugin(Spawn)
    loadTool(h.ctx, { provider: 'spawn' })
    await h.ctx.lifecycle.flush()
    return { h, provider }
  }

  function request(parent: Agent, signal: AbortSignal, prompt = 'child'): ProviderStartRequest {
    return { prompt, parent, signal, runId: 'run-test', depth: parent.depth + 1, onUpdate: () => {} }
  }

  describe('pre-aborted', () => {
    it('the service refuses an aborted start with ABORTED and the provider creates nothing', async () => {
      const model = routed({ child: () => { throw new Error('must not run') } })
      const { h } = await load(model)
      const root = h.ctx.agents.create()
      const before = agentsCreated(h.ctx)
      const error = await h.ctx.subagents.delegate('spawn', { prompt: 'child', parent: root, signal: AbortSignal.abort() })
        .then(() => undefined, (e) => e)
      expect(error).to.include({ code: 'ABORTED' })
      expect(agentsCreated(h.ctx)).to.equal(before + 1)
      expect(model.requests).to.deep.equal([])
      expect(h.starts).to.deep.equal([])
    })

    it('the provider itself rejects an aborted request before creating a child', async () => {
      const model = routed({ child: () => { throw new Error('must not run') } })
      const { h } = await load(model)
      const root = h.ctx.agents.create()
      const before = agentsCreated(h.ctx)
      const error = await h.ctx.subagents.get('spawn')!.start(request(root, AbortSignal.abort()))
        .then(() => undefined, (e) => e)
      expect(error).to.be.instanceOf(SubagentError)
      expect(error).to.include({ code: 'ABORTED' })
      expect(agentsCreated(h.ctx)).to.equal(before + 1)
      expect(model.requests).to.deep.equal([])
    })

    it('an abort that lands while the child is being created is not lost: start rejects, the child never runs', async () => {
      const model = routed({ child: () => { throw new Error('must not run') } })
      const { h } = await load(model)
      const root = h.ctx.agents.create()
      const controller = new AbortController()
      // The runtime reads the parent's cwd while it creates the child: abort right there.
      const parent = new Proxy(root, {
        get(target, key, receiver) {
          if (key === 'cwd') controller.abort(new Error('aborted mid-creation'))
          return Reflect.get(target, key, receiver)
        },
      })
      const error = await h.ctx.subagents.get('spawn')!.start(request(parent, controller.signal))
        .then(() => undefined, (e) => e)
      expect(controller.signal.aborted).to.equal(true)
      expect(error).to.include({ code: 'ABORTED' })
      expect(model.requests).to.deep.equal([])
    })
  })

  describe('during the run, through the subagent tool', () => {
    it('abort during the child\'s model call: the parent\'s call returns an error result, the child is disposed', async () => {
      const seen: Agent[] = []
      const modelCalled = deferred<AbortSignal>()
      const model = routed({
        child: ({ step, request }) => {
          if (step === 0) return { text: 'partial thoughts', toolCalls: [{ name: 'probe', input: {} }] }
          modelCalled.resolve(request.signal)
          return hang()
        },
      })
      const { h } = await load(model, [probeTool(seen)])
      const root = h.ctx.agents.create()
      const controller = new AbortController()
      const call = h.ctx.tools.view().execute(
        { id: 'c1', name: 'subagent', input: { description: 'work', prompt: 'child' } },
        { signal: controller.signal, agent: root, toolCallId: 'c1' },
      )
      const childSignal = await modelCalled.promise
      controller.abort()
      const result = await call

      expect(result.isError).to.equal(true)
      expect(result.content).to.match(/^Subagent cancelled: the delegating call was aborted\./)
      // The partial text is kept and labelled as partial.
      expect(result.content).to.include('Partial output (the subagent did not finish; treat this as incomplete):\npartial thoughts')
      expect(childSignal.aborted).to.equal(true)
      const [child] = seen
      expect(child.disposed).to.equal(true)
      expect(child.running).to.equal(false)
      expect(h.ends.map((end) => end.result.stopReason)).to.deep.equal(['aborted'])
      expect(h.ctx.subagents.runs()).to.deep.equal([])
    })

    it('abort while the child runs a tool: the tool sees the abort, the call returns an error result, the child is disposed', async () => {
      const seen: Agent[] = []
      const slow = slowState()
      const model = routed({
        child: ({ step }) => step === 0
          ? { toolCalls: [{ name: 'probe', input: {} }, { name: 'slow', input: {} }] }
          : { text: 'should not get here' },
      })
      const { h } = await load(model, [probeTool(seen), slowTool(slow, true)])
      const root = h.ctx.agents.create()
      const controller = new AbortController()
      const call = h.ctx.tools.view().execute(
        { id: 'c1', name: 'subagent', input: { description: 'work', prompt: 'child' } },
        { signal: controller.signal, agent: root, toolCallId: 'c1' },
      )
      const toolSignal = await slow.started.promise
      controller.abort()
      const result = await call

      expect(result.isError).to.equal(true)
      expect(result.content).to.match(/^Subagent cancelled: the delegating call was aborted\./)
      expect(toolSignal.aborted).to.equal(true)
      expect(slow.settled).to.equal(true)
      expect(seen[0].disposed).to.equal(true)
      expect(seen[0].running).to.equal(false)
      expect(model.requests.filter((r) => r.messages[0].content === 'child')).to.have.length(1)
    })

    it('aborting the parent\'s run mid-delegation ends the parent aborted and, after parent.dispose(), the child too', async () => {
      const seen: Agent[] = []
      const modelCalled = deferred<AbortSignal>()
      const model = routed({
        'root task': () => ({ toolCalls: [delegation('child', { id: 'd' })] }),
        child: ({ step, request }) => {
          if (step === 0) return { toolCalls: [{ name: 'probe', input: {} }] }
          modelCalled.resolve(request.signal)
          return hang()
        },
      })
      const { h } = await load(model, [probeTool(seen)])
      const root = h.ctx.agents.create()
      const controller = new AbortController()
      const running = root.run('root task', { signal: controller.signal })
      await modelCalled.promise
      controller.abort()
      const result = await running

      expect(result.stopReason).to.equal('aborted')
      const last = root.transcript.messages.at(-1)!
      expect(last).to.deep.include({ role: 'tool', toolCallId: 'd', isError: true })
      await root.dispose()
      expect(seen[0].disposed).to.equal(true)
      expect(seen[0].running).to.equal(false)
      expect(h.ends.map((end) => end.result.stopReason)).to.deep.equal(['aborted'])
      expect(h.ctx.subagents.runs()).to.deep.equal([])
    })
  })

  describe('dispose', () => {
    it('run.dispose() while the child runs cancels it and resolves only once it is idle; it is idempotent', async () => {
      const seen: Agent[] = []
      const slow = slowState()
      const model = routed({
        child: ({ step }) => step === 0 ? { toolCalls: [{ name: 'probe', input: {} }, { name: 'slow', input: {} }] } : { text: 'late' },
      })
      // The tool ignores the abort: the child stays busy until it is released.
      const { h } = await load(model, [probeTool(seen), slowTool(slow, false)])
      const root = h.ctx.agents.create()
      const run = await h.ctx.subagents.delegate('spawn', { prompt: 'child', parent: root, signal: new AbortController().signal })
      const toolSignal = await slow.started.promise

      let disposed = false
      const first = run.dispose().then(() => { disposed = true })
      const second = run.dispose()
      await tick(10)
      expect(toolSignal.aborted).to.equal(true)
      expect(disposed).to.equal(false)
      expect(slow.settled).to.equal(false)

      slow.release.resolve()
      await Promise.all([first, second])
      expect(disposed).to.equal(true)
      expect(slow.settled).to.equal(true)
      expect(seen[0].disposed).to.equal(true)
      expect(seen[0].running).to.equal(false)
      const result = await run.result
      expect(result.stopReason).to.equal('aborted')
      expect(h.ctx.subagents.runs()).to.deep.equal([])
      await run.dispose()
    })

    it('the provider\'s own run: dispose cancels, waits for quiescence, returns the same promise every time', async () => {
      const seen: Agent[] = []
      const slow = slowState()
      const model = routed({
        child: ({ step }) => step === 0 ? { toolCalls: [{ name: 'probe', input: {} }, { name: 'slow', input: {} }] } : { text: 'late' },
      })
      const { h } = await load(model, [probeTool(seen), slowTool(slow, false)])
      const root = h.ctx.agents.create()
      const run = await h.ctx.subagents.get('spawn')!.start(request(root, new AbortController().signal))
      expect(run.id).to.equal('run-test')
      await slow.started.promise
      expect(run.childId).to.equal(seen[0].id)

      const first = run.dispose()
      expect(run.dispose()).to.equal(first)
      let done = false
      void first.then(() => { done = true })
      await tick(10)
      expect(done).to.equal(false)
      slow.release.resolve()
      await first
      expect(seen[0].disposed).to.equal(true)
      expect((await run.result).stopReason).to.equal('aborted')
    })

    it('cancel(reason) ends the run aborted with the reason in the diagnostic', async () => {
      const modelCalled = deferred()
      const model = routed({ child: () => { modelCalled.resolve(); return hang() } })
      const { h } = await load(model)
      const root = h.ctx.agents.create()
      const run = await h.ctx.subagents.get('spawn')!.start(request(root, new AbortController().signal))
      await modelCalled.promise
      run.cancel('the user changed their mind')
      const result = await run.result
      expect(result.stopReason).to.equal('aborted')
      expect(result.diagnostic).to.equal('Aborted: the user changed their mind')
      await run.dispose()
    })
  })

  describe('provider unload', () => {
    it('unloading the provider plugin mid-run does not revoke the run: the parent\'s call returns the child\'s answer', async () => {
      const modelCalled = deferred()
      const release = deferred()
      const model = routed({
        'root task': ({ step, results, request }) => step === 0
          ? { toolCalls: [delegation('child')] }
          : { text: `got: ${results[0].content}; tools now: ${request.tools.map((t) => t.name).join(',') || '(none)'}` },
        child: async () => {
          modelCalled.resolve()
          await release.promise
          return { text: 'child answer' }
        },
      })
      const { h, provider } = await load(model)
      const root = h.ctx.agents.create()
      const running = root.run('root task')
      await modelCalled.promise
      // The child's first model call happens inside start(); wait for the hand-over.
      await until(() => h.starts.length === 1)
      provider.dispose()
      expect(h.ctx.subagents.get('spawn')).to.equal(undefined)
      expect(h.ctx.tools.has('subagent')).to.equal(false)
      expect(h.ctx.subagents.runs()).to.have.length(1)
      release.resolve()

      const result = await running
      expect(result.stopReason).to.equal('completed')
      expect(result.text).to.equal('got: child answer; tools now: (none)')
      expect(h.ends.map((end) => end.result.stopReason)).to.deep.equal(['completed'])
      expect(h.ctx.subagents.runs()).to.deep.equal([])

      // Loading it again brings the tool back.
      h.ctx.plugin(Spawn)
      await h.ctx.lifecycle.flush()
      expect(h.ctx.tools.has('subagent')).to.equal(true)
    })
  })
})
