// The subject of the provider contract suite for the in-process providers (spawn here, fork reuses it).
import { Context } from 'cordis'
import { z } from 'zod'
import ToolRegistry, { type Tool } from '@cordis-subagents/tools'
import AgentRuntime, { type Agent, type ChatModel, type GenerateRequest, type GenerateResponse } from '@cordis-subagents/agent'
import { createInProcessProvider, MAX_IN_PROCESS_FOLLOW_UPS } from '@cordis-subagents/provider-spawn'
import type { ProviderContractSubject } from '@cordis-subagents/subagents-service/testing'

const COMPLETE = 'contract: answer at once'
const WAIT = 'contract: work until cancelled'
const STEER = 'contract: wait for a follow-up, then name every follow-up you read'
const AWAIT_FOLLOW_UP = 'await_follow_up'

/**
 * The steered child's tool: it holds the child's turn open until a message reaches the child's
 * inbox (the far edge of the fixture: a tool that blocks like real work, until steered) or the
 * call is aborted.
 */
const awaitFollowUp: Tool = {
  name: AWAIT_FOLLOW_UP,
  description: 'Waits until a follow-up message for you arrives.',
  input: z.object({}),
  async execute(_input, exec) {
    const { inbox } = exec.agent as Agent
    const release = inbox.hold()
    try {
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => reject(exec.signal.reason)
        if (exec.signal.aborted) return onAbort()
        exec.signal.addEventListener('abort', onAbort, { once: true })
        inbox.changed().then(() => {
          exec.signal.removeEventListener('abort', onAbort)
          resolve()
        })
      })
    } finally {
      release()
    }
    return { content: 'A follow-up arrived.' }
  },
}

/**
 * A model that answers `COMPLETE` at once and keeps a `WAIT` call open until its signal aborts;
 * `inFlight` counts model calls still running (the observable "nothing left running").
 */
class ContractModel implements ChatModel {
  inFlight = 0

  async generate(request: GenerateRequest): Promise<GenerateResponse> {
    this.inFlight++
    try {
      const prompt = request.messages.findLast((message) => message.role === 'user')?.content
      const steered = request.messages.findLastIndex((message) => message.role === 'user' && message.content === STEER)
      if (steered >= 0) return steer(request.messages.slice(steered + 1), request.signal)
      if (prompt === WAIT) {
        await new Promise<void>((resolve) => {
          if (request.signal.aborted) resolve()
          else request.signal.addEventListener('abort', () => resolve(), { once: true })
        })
        throw request.signal.reason
      }
      return { text: 'contract answer', toolCalls: [], finishReason: 'stop', usage: { inputTokens: 5, outputTokens: 2 } }
    } finally {
      this.inFlight--
    }
  }
}

/** The steered child: waits (a tool call) until a follow-up came, then answers naming every follow-up it read. */
async function steer(after: GenerateRequest['messages'], signal: AbortSignal): Promise<GenerateResponse> {
  if (signal.aborted) throw signal.reason
  const followUps = after.filter((message) => message.role === 'user').map((message) => message.content)
  const usage = { inputTokens: 3, outputTokens: 1 }
  if (!followUps.length) {
    return { text: '', toolCalls: [{ id: `wait-${after.length}`, name: AWAIT_FOLLOW_UP, input: {} }], finishReason: 'tool-calls', usage }
  }
  return { text: `read: ${followUps.join(' ')}`, toolCalls: [], finishReason: 'stop', usage }
}

/** A started Context with the real tools and agent runtime, and an in-process provider over it. */
export async function inProcessSubject(inheritsParentContext: boolean): Promise<ProviderContractSubject> {
  const ctx = new Context()
  ctx.plugin(ToolRegistry)
  ctx.plugin(AgentRuntime, { model: 'contract' })
  await ctx.start()
  const model = new ContractModel()
  ctx.agents.registerModel('contract', model)
  ctx.tools.register(awaitFollowUp)
  const provider = createInProcessProvider(ctx, { name: inheritsParentContext ? 'fork' : 'spawn', inheritsParentContext })
  return {
    completing: provider,
    waiting: provider,
    parent: ctx.agents.create({ label: 'contract-parent' }),
    prompts: { completing: COMPLETE, waiting: WAIT },
    steering: { provider, prompt: STEER, maxQueued: MAX_IN_PROCESS_FOLLOW_UPS },
    assertIdle() {
      if (model.inFlight) throw new Error(`${model.inFlight} model call(s) of a child are still running`)
    },
    teardown: () => ctx.stop(),
  }
}
