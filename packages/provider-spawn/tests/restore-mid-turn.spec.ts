import { expect } from 'chai'
import { z } from 'zod'
import { type AgentCheckpoint, type GenerateRequest, ScriptedModel } from '@cordis-subagents/agent'
import { createInProcessProvider } from '@cordis-subagents/provider-spawn'
import type { ProviderStartRequest, RunRecord, SubagentRun } from '@cordis-subagents/subagents-service'
import { type Harness, setup, until } from './helpers.js'

/** Blocks until the turn is aborted: a child mid-turn when its host dies. */
const never = (signal: AbortSignal) => new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }))

const users = (request: GenerateRequest) => request.messages.filter((m) => m.role === 'user').map((m) => m.content)

/**
 * Issue 38, item 3: a child checkpointed mid-turn (what the journal stores while it runs, and all a
 * SIGKILLed host leaves) and restored keeps its task and the steps it completed; `send` + `wake`
 * then run a new turn on that whole transcript. test/durable-restart.slow.spec.ts does the same across a real SIGKILL.
 */
describe('in-process provider: a child checkpointed mid-turn and restored', () => {
  let h: Harness
  const seen: string[][] = []

  beforeEach(async () => {
    seen.length = 0
    const look = { name: 'look', description: 'looks', input: z.object({}), execute: () => ({ content: 'the fence is grey' }) }
    h = await setup({ models: { m: new ScriptedModel([{ text: 'unused' }]) }, tools: [look] })
    h.ctx.agents.registerModel('child', new ScriptedModel((request) => {
      if (users(request).at(-1) === 'please finish') {
        seen.push(users(request))
        return { text: `finished, with ${request.messages.filter((m) => m.role === 'tool').map((m) => m.content).join(', ')}` }
      }
      // First a step that completes (a tool call and its result), then a step that never ends.
      if (!request.messages.some((m) => m.role === 'tool')) return { toolCalls: [{ name: 'look', input: {} }] }
      return never(request.signal)
    }))
  })
  afterEach(async () => { await h.ctx.stop() })

  function request(runId: string): ProviderStartRequest {
    const parent = h.ctx.agents.create({ model: 'm' })
    return { prompt: 'paint the fence', parent, signal: new AbortController().signal, runId, depth: 1, agentOptions: { model: 'child' } }
  }

  for (const inheritsParentContext of [false, true]) {
    it(`${inheritsParentContext ? 'fork' : 'spawn'}: its task and its completed step survive; a new turn runs on them`, async () => {
      const provider = createInProcessProvider(h.ctx, { name: 'spawn', inheritsParentContext })
      const first = await provider.start(request('mid-turn-1'))
      // At the hand-over (the journal's start record) the child already has its task.
      const atStart = first.checkpoint!() as AgentCheckpoint
      expect(atStart.messages.map((m) => m.content)).to.deep.equal(['paint the fence'])
      // Once its first step completed, the checkpoint has it; the step in flight is left out.
      await until(() => (first.checkpoint!() as AgentCheckpoint).messages.length === 3, 'the first step completed')
      const checkpoint = first.checkpoint!() as AgentCheckpoint
      expect(checkpoint.messages.map((m) => m.role)).to.deep.equal(['user', 'assistant', 'tool'])
      expect(checkpoint.parked).to.equal(undefined)
      await first.dispose()

      const record: RunRecord = { runId: 'mid-turn-1', provider: 'spawn', parentId: 'gone', depth: 1, state: 'interrupted', checkpoint }
      const restored: SubagentRun = await provider.restore!(record, request('mid-turn-1'))
      expect((await restored.result).stopReason).to.equal('interrupted')
      restored.send!('please finish')
      const result = await restored.wake!()
      expect(result).to.deep.include({ stopReason: 'completed', output: 'finished, with the fence is grey' })
      expect(seen).to.deep.equal([['paint the fence', 'please finish']])
      await restored.dispose()
    })
  }
})
