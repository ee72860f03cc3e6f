// A delegation waits on its parent turn's abort as an AbortScope: no AbortSignal is made unless something reads one.
// Real Context, real services, the real subagent tool and spawn provider, scripted models.
import { expect } from 'chai'
import { Context } from 'cordis'
import ToolRegistry, { type Tool, type ToolExecContext } from '@cordis-subagents/tools'
import AgentRuntime, { type GenerateRequest, type GenerateResponse } from '@cordis-subagents/agent'
import SubagentService from '@cordis-subagents/subagents-service'
import * as Spawn from '@cordis-subagents/provider-spawn'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import * as SubagentControl from '@cordis-subagents/subagent-tool/control'
import { LazyAbort } from '@cordis-subagents/shared'
import { signalsMadeDuring } from '@cordis-subagents/test-support'
import { z } from 'zod'
import { deferred, until } from './support/async.js'

const CHILD = 'CHILD: '
const text = (value: string): GenerateResponse => ({ text: value, toolCalls: [], finishReason: 'stop' })
const lastOf = (request: GenerateRequest) => request.messages[request.messages.length - 1]
/** A model call that answers only its abort (a dispose waits for the call to settle). */
const untilAborted = (request: GenerateRequest) => new Promise<GenerateResponse>((_, reject) => {
  request.signal.addEventListener('abort', () => reject(request.signal.reason), { once: true })
})

async function app(child: (request: GenerateRequest) => Promise<GenerateResponse>, tool: Record<string, unknown> = {}) {
  const ctx = new Context()
  ctx.plugin(ToolRegistry)
  ctx.plugin(AgentRuntime, { model: 'm' })
  ctx.plugin(SubagentService, {})
  await ctx.start()
  await ctx.lifecycle.flush()
  ctx.agents.registerModel('m', {
    async generate(request) {
      const last = lastOf(request)
      if (request.messages.some((message) => message.role !== 'assistant' && message.content.includes('child answer'))) {
        return text(`parent got: ${last.content}`)
      }
      if (last.role === 'tool') return text('started')
      if (last.content.startsWith(CHILD)) return child(request)
      return { text: '', finishReason: 'tool-calls', toolCalls: [{ id: 'c1', name: 'subagent', input: { description: 'a part', prompt: `${CHILD}work` } }] }
    },
  })
  ctx.plugin(Spawn)
  ctx.plugin(SubagentTool, { provider: 'spawn', ...tool })
  await ctx.lifecycle.flush()
  return ctx
}

describe('a delegation waits on its turn\'s abort scope', () => {
  let ctx: Context | undefined
  afterEach(async () => { await ctx?.stop(); ctx = undefined })

  it('a synchronous delegation, its parent\'s turn included, makes no AbortSignal', async () => {
    ctx = await app(async () => text('child answer'))
    const parent = ctx.agents.create({})
    const made = await signalsMadeDuring(async () => {
      expect((await parent.run('go')).text).to.equal('parent got: child answer')
    })
    expect(made).to.equal(0)
    await parent.dispose()
  })

  it('a background delegation, its parent\'s turn included, makes no AbortSignal either', async () => {
    ctx = await app(async () => text('child answer'), { mode: 'background' })
    const parent = ctx.agents.create({})
    const made = await signalsMadeDuring(async () => {
      const result = await parent.run('go')
      expect(result.text).to.match(/^parent got: /)
      expect(result.text).to.include('child answer')
    })
    expect(made).to.equal(0)
    await parent.dispose()
  })

  it('a background start collected by subagent_wait makes no AbortSignal (the wait waits on its call\'s abort scope)', async () => {
    const childGo = deferred<void>()
    ctx = await app(async () => text('unused'), { mode: 'background' })
    ctx.plugin(SubagentControl, {})
    await ctx.lifecycle.flush()
    // The child runs on its parent's model: it answers once the test lets it.
    ctx.agents.registerModel('bw', {
      async generate(request) {
        const last = lastOf(request)
        if (request.messages.some((message) => message.role === 'user' && message.content.startsWith(CHILD))) {
          await childGo.promise
          return text('child answer')
        }
        if (last.role === 'tool' && last.name === 'subagent_wait') return text(`waited: ${last.content}`)
        if (last.role === 'tool') return { text: '', finishReason: 'tool-calls', toolCalls: [{ id: 'w1', name: 'subagent_wait', input: {} }] }
        return { text: '', finishReason: 'tool-calls', toolCalls: [{ id: 'c1', name: 'subagent', input: { description: 'a part', prompt: `${CHILD}work` } }] }
      },
    })
    const parent = ctx.agents.create({ model: 'bw' })
    const made = await signalsMadeDuring(async () => {
      const running = parent.run('go')
      await until(() => ctx!.subagents.background.live.size === 1, 'the background delegation started')
      childGo.resolve()
      const result = await running
      expect(result.text).to.match(/^waited: /)
      expect(result.text).to.include('child answer')
    })
    expect(made).to.equal(0)
    await parent.dispose()
  })

  it('the parent\'s turn aborted mid-delegation aborts the child (as its delegating call\'s abort) and leaves no run live', async () => {
    const reached = deferred<void>()
    let childRequest: GenerateRequest | undefined
    ctx = await app((request) => {
      childRequest = request
      reached.resolve()
      return untilAborted(request)
    })
    const parent = ctx.agents.create({})
    const caller = new LazyAbort()
    const running = parent.run('go', { abortScope: caller })
    await reached.promise
    await until(() => ctx!.subagents.runs().length === 1, 'the child run was handed over')
    caller.abort('the user left')
    expect((await running).stopReason).to.equal('aborted')
    expect(childRequest!.signal.aborted).to.equal(true)
    expect(String(childRequest!.signal.reason)).to.include('the delegating call was aborted')
    await until(() => ctx!.subagents.runs().length === 0, 'the child run was released')
    await parent.dispose()
  })

  it('a tool gets exec.abortScope beside exec.signal, an own enumerable accessor made only when read', async () => {
    ctx = await app(async () => text('unused'))
    const seen: Array<{ keys: string[]; scopeAborted: boolean }> = []
    const release = deferred<void>()
    let exec: ToolExecContext | undefined
    const waiting: Tool = {
      name: 'wait', description: 'waits', input: z.object({}),
      async execute(_input, given) {
        exec = given
        seen.push({ keys: Object.keys(given), scopeAborted: given.abortScope!.aborted })
        await new Promise<void>((resolve) => {
          given.abortScope!.onAbort(resolve)
          void release.promise.then(resolve)
        })
        return { content: 'waited' }
      },
    }
    ctx.tools.register(waiting)
    ctx.agents.registerModel('w', {
      async generate(request) {
        return lastOf(request).role === 'tool' ? text('done')
          : { text: '', finishReason: 'tool-calls', toolCalls: [{ id: 'w1', name: 'wait', input: {} }] }
      },
    })
    const agent = ctx.agents.create({ model: 'w' })
    const caller = new LazyAbort()
    let running!: ReturnType<typeof agent.run>
    const made = await signalsMadeDuring(async () => {
      running = agent.run('go', { abortScope: caller })
      while (!exec) await new Promise((resolve) => setImmediate(resolve))
      caller.abort('stop waiting')
      expect((await running).stopReason).to.equal('aborted')
    })
    expect(made).to.equal(0)
    expect(seen).to.deep.equal([{ keys: ['abortScope', 'agent', 'toolCallId', 'signal'], scopeAborted: false }])
    expect(exec!.abortScope!.aborted).to.equal(true)
    expect(exec!.abortScope!.reason).to.equal('stop waiting')
    // Read only now: made aborted, with the reason.
    expect(exec!.signal.aborted).to.equal(true)
    expect(exec!.signal.reason).to.equal('stop waiting')
    release.resolve()
    await agent.dispose()
  })

  it('ctx.subagents.begin takes request.abortScope in place of a signal: its abort cancels the run; aborted already is ABORTED; not a scope is INVALID_REQUEST', async () => {
    const reached = deferred<void>()
    ctx = await app((request) => { reached.resolve(); return untilAborted(request) })
    const parent = ctx.agents.create({})
    const scope = new LazyAbort()
    const start = ctx.subagents.begin('spawn', { prompt: `${CHILD}work`, parent, abortScope: scope } as never)
    const run = await start.handle
    await reached.promise
    scope.abort('no longer wanted')
    const outcome = await run.result
    expect(outcome.stopReason).to.equal('aborted')
    expect(outcome.diagnostic).to.include('no longer wanted')
    await run.dispose()
    const codeOf = async (request: object) => {
      try {
        await ctx!.subagents.begin('spawn', { prompt: `${CHILD}work`, parent, ...request } as never).handle
        return 'started'
      } catch (error) {
        return (error as { code?: string }).code
      }
    }
    const aborted = new LazyAbort()
    aborted.abort('before')
    expect(await codeOf({ abortScope: aborted })).to.equal('ABORTED')
    expect(await codeOf({ abortScope: { aborted: false } })).to.equal('INVALID_REQUEST')
    expect(await codeOf({})).to.equal('INVALID_REQUEST')
    await parent.dispose()
  })
})
