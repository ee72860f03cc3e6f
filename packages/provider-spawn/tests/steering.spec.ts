import { expect } from 'chai'
import fc from 'fast-check'
import { type Agent, type GenerateRequest, type InboxMessage, ScriptedModel } from '@cordis-subagents/agent'
import { z } from 'zod'
import { createInProcessProvider } from '@cordis-subagents/provider-spawn'
import type { ProviderStartRequest, SubagentRun } from '@cordis-subagents/subagents-service'
import { type Harness, setup, tick } from './helpers.js'

/** The user messages of this turn and those before it that the model was shown after the first prompt. */
function followUps(request: GenerateRequest): string[] {
  return request.messages.filter((message) => message.role === 'user').slice(1).map((message) => message.content)
}

/** A run's `send`, or a failure when the run has none. */
function sender(run: SubagentRun): (message: string) => void {
  expect(run.send, 'in-process runs can be steered').to.be.a('function')
  return (message) => run.send!(message)
}

function codeOf(action: () => void): string | undefined {
  try {
    action()
    return undefined
  } catch (error) {
    return (error as { code?: string }).code
  }
}

/** Steering an in-process child (`run.send`): the inbox while a turn runs, one more turn when a turn ended with messages unread. */
describe('in-process provider: steering (send)', () => {
  let h: Harness

  beforeEach(async () => {
    h = await setup({ models: { m: new ScriptedModel([{ text: 'unused' }]) } })
  })
  afterEach(async () => { await h.ctx.stop() })

  function request(model: string): ProviderStartRequest {
    const parent = h.ctx.agents.create({ model: 'm' })
    return { prompt: 'the task', parent, signal: new AbortController().signal, runId: 'steer-1', depth: parent.depth + 1, agentOptions: { model } }
  }

  it('a message sent during the turn\'s last step, past the step limit, gets a turn of its own: nothing sent before the result is lost', async () => {
    let send!: (message: string) => void
    const model = new ScriptedModel([
      // The child's final answer of its only allowed step; the parent sends while it is being made.
      async () => {
        await tick(1) // the hand-over happens after the child's first model call began
        send('also check the tests')
        return { text: 'first answer', usage: { inputTokens: 10, outputTokens: 2 } }
      },
      (req) => ({ text: `second answer, after: ${followUps(req).join(' | ')}`, usage: { inputTokens: 20, outputTokens: 3, cachedInputTokens: 4 } }),
    ])
    h.ctx.agents.registerModel('steered', model)
    const provider = createInProcessProvider(h.ctx, { name: 'spawn', inheritsParentContext: false, maxSteps: 1 })
    const run = await provider.start(request('steered'))
    send = sender(run)
    const result = await run.result
    expect(result.stopReason).to.equal('completed')
    // The one output rule: the last turn's text.
    expect(result.output).to.equal('second answer, after: also check the tests')
    // Both turns roll into the one result.
    expect(result.usage).to.deep.equal({ inputTokens: 30, outputTokens: 5, cachedInputTokens: 4 })
    expect(result.work).to.deep.equal({ steps: 2, toolCalls: 0, delegations: 0 })
    expect(model.requests).to.have.length(2)
    expect(codeOf(() => send('too late'))).to.equal('NOT_RUNNING')
    await run.dispose()
  })

  it('only its own follow-ups are taken from the child\'s inbox: a grandchild\'s result stays, is read with its usage, or is handed to the close', async () => {
    let child!: Agent
    let send!: (message: string) => void
    const unreadAtClose: InboxMessage[][] = []
    h.ctx.plugin({
      name: 'grab-tool',
      inject: ['tools'],
      apply(ctx) {
        ctx.tools.register({
          name: 'grab', description: 'test hook', input: z.object({}),
          execute: (_input, exec) => {
            child = exec.agent as Agent
            child.inbox.onClose((unread) => { unreadAtClose.push([...unread]) })
            return { content: 'ok' }
          },
        })
      },
    })
    await h.ctx.lifecycle.flush()
    const model = new ScriptedModel([
      { toolCalls: [{ name: 'grab', input: {} }] },
      // The last allowed step: a background grandchild's result arrives, and the parent sends a follow-up.
      () => {
        child.inbox.post('[grandchild result]', { usage: { inputTokens: 100, outputTokens: 50 } })
        send('follow-up please')
        return { text: 'first answer' }
      },
      (req) => ({ text: `second: ${followUps(req).slice(-2).join(' | ')}` }),
      // A second run: the grandchild's result comes after the child's final answer and is never read.
      { toolCalls: [{ name: 'grab', input: {} }] },
      () => {
        child.inbox.post('[late grandchild result]', { usage: { inputTokens: 7, outputTokens: 7 } })
        return { text: 'done' }
      },
    ])
    h.ctx.agents.registerModel('own', model)
    const provider = createInProcessProvider(h.ctx, { name: 'spawn', inheritsParentContext: false, maxSteps: 2 })
    const run = await provider.start(request('own'))
    send = sender(run)
    const result = await run.result
    // The follow-up is the next turn's prompt; the grandchild's result is read after it, with its usage.
    expect(result.output).to.equal('second: follow-up please | [grandchild result]')
    expect(result.usage).to.deep.equal({ inputTokens: 100, outputTokens: 50 })
    expect(result.diagnostic).to.equal(undefined)
    await run.dispose()

    const second = await provider.start({ ...request('own'), runId: 'steer-2' })
    const ended = await second.result
    expect(ended.output).to.equal('done')
    // Not a follow-up of this run: not counted as one, and not dropped by the run's close ...
    expect(ended.diagnostic).to.equal(undefined)
    expect(child.inbox.size).to.equal(1)
    await second.dispose()
    // ... but handed, unread, to whoever owns it when the child is disposed (the background book reports it lost).
    expect(unreadAtClose.at(-1)!.map((message) => message.content)).to.deep.equal(['[late grandchild result]'])
  })

  it('a message sent while the child works is read at its next step, in the same turn', async () => {
    let send!: (message: string) => void
    const model = new ScriptedModel([
      async () => {
        await tick(1)
        send('focus on src/')
        return { toolCalls: [{ name: 'no_such_tool', input: {} }] }
      },
      (req) => ({ text: `done; read ${JSON.stringify(followUps(req))}` }),
    ])
    h.ctx.agents.registerModel('steered', model)
    const provider = createInProcessProvider(h.ctx, { name: 'spawn', inheritsParentContext: false })
    const run = await provider.start(request('steered'))
    send = sender(run)
    const result = await run.result
    expect(result.output).to.equal('done; read ["focus on src/"]')
    // One turn: two model calls, the message between them.
    expect(result.work?.steps).to.equal(2)
    expect(model.requests[1]!.messages.map((message) => message.role)).to.deep.equal(['user', 'assistant', 'tool', 'user'])
    await run.dispose()
  })

  it('a turn that ends other than completed ends the run at once; unread messages are named in the diagnostic', async () => {
    let send!: (message: string) => void
    h.ctx.agents.registerModel('failing', new ScriptedModel([async () => {
      await tick(1)
      send('one')
      send('two')
      return { text: 'partial', finishReason: 'length' }
    }]))
    const provider = createInProcessProvider(h.ctx, { name: 'spawn', inheritsParentContext: false })
    const run = await provider.start(request('failing'))
    send = sender(run)
    const result = await run.result
    expect(result.stopReason).to.equal('max-tokens')
    expect(result.output).to.equal('partial')
    expect(result.diagnostic).to.contain('2 follow-up messages were not read').and.contain('max-tokens')
    expect(codeOf(() => send('later'))).to.equal('NOT_RUNNING')
    await run.dispose()
  })

  it('cancel closes steering at once (NOT_RUNNING) and drops what waits', async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => { release = resolve })
    h.ctx.agents.registerModel('slow', new ScriptedModel(async () => { await gate; return { text: 'late' } }))
    const provider = createInProcessProvider(h.ctx, { name: 'spawn', inheritsParentContext: false })
    const run = await provider.start(request('slow'))
    const send = sender(run)
    send('queued before the cancel')
    run.cancel('enough')
    expect(codeOf(() => send('after cancel'))).to.equal('NOT_RUNNING')
    const result = await run.result
    expect(result.stopReason).to.equal('aborted')
    expect(result.diagnostic).to.contain('1 follow-up message was not read')
    release()
    await run.dispose()
  })

  it('refuses invalid messages with INVALID_REQUEST and keeps the run working', async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => { release = resolve })
    h.ctx.agents.registerModel('gated', new ScriptedModel([async () => { await gate; return { text: 'first' } }, (req) => ({ text: followUps(req).join(',') })]))
    const provider = createInProcessProvider(h.ctx, { name: 'spawn', inheritsParentContext: false })
    const run = await provider.start(request('gated'))
    const send = sender(run)
    expect(codeOf(() => send(''))).to.equal('INVALID_REQUEST')
    expect(codeOf(() => send('x'.repeat((1 << 20) + 1)))).to.equal('INVALID_REQUEST')
    send('ok')
    release()
    expect((await run.result).output).to.equal('ok')
    await run.dispose()
  })

  it('through ctx.subagents: the handle\'s send reaches the child, and the result rolls up both turns', async () => {
    let handle: { send(message: string): void } | undefined
    h.ctx.agents.registerModel('steered', new ScriptedModel([
      async () => {
        while (!handle) await tick(1)
        handle.send('and the tests')
        return { text: 'first', usage: { inputTokens: 1, outputTokens: 1 } }
      },
      (req) => ({ text: `also: ${followUps(req).join()}`, usage: { inputTokens: 2, outputTokens: 2 } }),
    ]))
    h.ctx.plugin({ name: 'spawn-for-steering', inject: ['subagents', 'agents'], apply: (ctx) => {
      ctx.subagents.register(createInProcessProvider(ctx, { name: 'spawn-steer', inheritsParentContext: false, maxSteps: 1 }))
    } })
    await tick()
    const parent = h.ctx.agents.create({ model: 'm' })
    const run = await h.ctx.subagents.delegate('spawn-steer', { prompt: 'task', parent, signal: new AbortController().signal, agentOptions: { model: 'steered' } })
    handle = run
    const result = await run.result
    expect(result).to.deep.include({ stopReason: 'completed', output: 'also: and the tests', usage: { inputTokens: 3, outputTokens: 3 } })
    expect(codeOf(() => run.send('late'))).to.equal('NOT_RUNNING')
    await run.dispose()
  })

  it('fuzz: sends at any moment of a run are either read before its result or refused NOT_RUNNING', async function () {
    this.timeout(60_000)
    await fc.assert(fc.asyncProperty(
      fc.array(fc.nat(12), { minLength: 1, maxLength: 6 }),
      fc.integer({ min: 1, max: 3 }),
      async (delays, maxSteps) => {
        // The child answers at once, naming every follow-up it has seen in this run.
        const model = new ScriptedModel((req) => ({ text: `seen: ${followUps(req).map((m) => `<${m}>`).join('')}` }))
        const name = `fuzz-${Math.random().toString(36).slice(2)}`
        h.ctx.agents.registerModel(name, model)
        const provider = createInProcessProvider(h.ctx, { name: 'spawn', inheritsParentContext: false, maxSteps })
        const run = await provider.start(request(name))
        const send = sender(run)
        const taken: string[] = []
        const refused: string[] = []
        for (const [i, delay] of delays.entries()) {
          // Microtask and macrotask boundaries both: the turn may end (or the run settle) in between.
          for (let t = 0; t < delay; t++) await (t % 2 ? tick() : Promise.resolve())
          const message = `m${i}`
          const code = codeOf(() => send(message))
          if (code === undefined) taken.push(message)
          else {
            expect(code).to.equal('NOT_RUNNING')
            refused.push(message)
          }
        }
        const result = await run.result
        expect(result.stopReason).to.equal('completed')
        for (const message of taken) expect(result.output, `taken ${message} was lost`).to.contain(`<${message}>`)
        for (const message of refused) expect(result.output, `refused ${message} was read`).to.not.contain(`<${message}>`)
        await run.dispose()
      },
    ), { numRuns: 60 })
  })
})
