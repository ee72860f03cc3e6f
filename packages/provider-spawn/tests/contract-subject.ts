// The subject of the provider contract suite for the in-process providers (spawn here, fork reuses it).
import { Context } from 'cordis'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime, { type ChatModel, type GenerateRequest, type GenerateResponse } from '@cordis-subagents/agent'
import { createInProcessProvider } from '@cordis-subagents/provider-spawn'
import type { ProviderContractSubject } from '@cordis-subagents/subagents-service/testing'

const COMPLETE = 'contract: answer at once'
const WAIT = 'contract: work until cancelled'

/**
 * A model that answers `COMPLETE` at once and keeps a `WAIT` call open until its signal aborts;
 * `inFlight` counts model calls still running (the observable "nothing left running").
 */
export class ContractModel implements ChatModel {
  inFlight = 0

  async generate(request: GenerateRequest): Promise<GenerateResponse> {
    this.inFlight++
    try {
      const prompt = request.messages.findLast((message) => message.role === 'user')?.content
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

/** A started Context with the real tools and agent runtime, and an in-process provider over it. */
export async function inProcessSubject(inheritsParentContext: boolean): Promise<ProviderContractSubject> {
  const ctx = new Context()
  ctx.plugin(ToolRegistry)
  ctx.plugin(AgentRuntime, { model: 'contract' })
  await ctx.start()
  const model = new ContractModel()
  ctx.agents.registerModel('contract', model)
  const provider = createInProcessProvider(ctx, { name: inheritsParentContext ? 'fork' : 'spawn', inheritsParentContext })
  return {
    completing: provider,
    waiting: provider,
    parent: ctx.agents.create({ label: 'contract-parent' }),
    prompts: { completing: COMPLETE, waiting: WAIT },
    assertIdle() {
      if (model.inFlight) throw new Error(`${model.inFlight} model call(s) of a child are still running`)
    },
    teardown: () => ctx.stop(),
  }
}
