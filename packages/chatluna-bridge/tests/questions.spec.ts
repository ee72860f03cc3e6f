// A child that asks a question under a tool call from ChatLuna: the call cannot wait for an answer (its
// root agent is disposed when it returns), so ChatLuna's agent gets the question as a coded error, never
// an empty result, and the child is ended with the call. Through the registered ChatLuna tool, as ChatLuna calls it.
import { expect } from 'chai'
import { Context } from 'cordis'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime from '@cordis-subagents/agent'
import SubagentService from '@cordis-subagents/subagents-service'
import * as spawn from '@cordis-subagents/provider-spawn'
import * as subagentTool from '@cordis-subagents/subagent-tool'
import * as SubagentControl from '@cordis-subagents/subagent-tool/control'
import { eventually } from '@cordis-subagents/test-support'
import * as bridge from '@cordis-subagents/koishi-plugin-chatluna-subagents'
import type { ChatLunaToolEntry } from '../src/chatluna.js'

/** The child asks once, then reports the answer it got; our root agent never runs a model turn here. */
const asking = {
  async generate(request: { messages: Array<{ role: string, content: unknown }> }) {
    const answered = request.messages.filter((m) => m.role === 'tool')
    if (!answered.length) {
      const input = { question: 'Which region?\u202e' }
      return { text: '', toolCalls: [{ id: 'a1', name: 'ask_parent', input }], finishReason: 'tool-calls' as const }
    }
    return { text: `deployed to ${String(answered.at(-1)!.content)}`, toolCalls: [], finishReason: 'stop' as const }
  },
}

async function start(questions: 'escalate' | 'answer', withReplyVerb: boolean) {
  const entries = new Map<string, ChatLunaToolEntry>()
  const chatluna = {
    createChatModel: async () => ({ value: undefined }),
    platform: {
      registerTool: (name: string, entry: ChatLunaToolEntry) => {
        entry.id = name
        entries.set(name, entry)
        return () => entries.delete(name)
      },
      unregisterTool: (name: string) => entries.delete(name),
      getTool: (name: string) => entries.get(name) ?? {},
      findModel: () => ({ value: undefined }),
    },
  }
  const ctx = new Context()
  ctx.plugin(ToolRegistry)
  ctx.plugin(AgentRuntime, { model: 'asking' })
  ctx.plugin(SubagentService)
  ctx.plugin(spawn, { name: 'spawn', askParent: true })
  ctx.plugin(subagentTool, { provider: 'spawn', questions })
  if (withReplyVerb) ctx.plugin(SubagentControl)
  ctx.plugin({ name: 'model', inject: ['agents'], apply: (c: Context) => c.agents.registerModel('asking', asking as never) })
  ctx.provide('chatluna', chatluna as never, true)
  ctx.plugin(bridge, bridge.Config({}))
  await ctx.start()
  const entry = await eventually(() => entries.get('subagent'), 'the subagent tool registered with ChatLuna')
  return { ctx, tool: entry.createTool() as unknown as { invoke(input: unknown): Promise<string> } }
}

describe('chatluna-bridge: a child that asks under a ChatLuna tool call', () => {
  for (const [questions, withReplyVerb] of [['escalate', false], ['answer', false], ['answer', true]] as const) {
    it(`questions: ${questions}${withReplyVerb ? ' (the reply verb loaded)' : ''}: a coded error with the question; the child ends`, async () => {
      const { ctx, tool } = await start(questions, withReplyVerb)
      try {
        const content = await tool.invoke({ description: 'deploy', prompt: 'Deploy it' })
        expect(content).to.match(/^CHATLUNA_QUESTION_UNANSWERABLE: the subagent asked a question, and a tool call from ChatLuna cannot wait/)
        expect(content).to.include('Its question:\nWhich region?\n')
        expect(content).to.include('Call the tool again with a prompt that answers it.')
        expect(content).to.not.include('subagent_reply')
        await eventually(() => ctx.subagents.runs().length === 0 && ctx.subagents.pending().length === 0, 'the parked child ended')
      } finally {
        await ctx.stop()
      }
    })
  }
})
