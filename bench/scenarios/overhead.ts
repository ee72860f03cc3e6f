import type { Model, ModelRequest, ModelResponse } from '@openai/agents'
import { z } from 'zod'
import { withoutCallerTracing } from '@cordis-subagents/shared'
import type { GenerateRequest, Message } from '@cordis-subagents/agent'
import { CHILD, delegationModel, host, interleave, type Stats } from '../lib.js'

// ---------------------------------------------------------------------------------------------
// The floor: the same three scripted model calls, no framework at all.

const floorModel = delegationModel('subagent')
const NO_TOOLS: GenerateRequest['tools'] = []

async function floor(): Promise<void> {
  const signal = new AbortController().signal
  const messages: Message[] = [{ role: 'user', content: 'do the task' }]
  const first = await floorModel.generate({ messages, tools: NO_TOOLS, signal })
  messages.push({ role: 'assistant', content: first.text, toolCalls: first.toolCalls })
  const call = first.toolCalls[0]
  const child = await floorModel.generate({ messages: [{ role: 'user', content: (call.input as { prompt: string }).prompt }], tools: NO_TOOLS, signal })
  messages.push({ role: 'tool', toolCallId: call.id, name: call.name, content: child.text })
  const final = await floorModel.generate({ messages, tools: NO_TOOLS, signal })
  if (final.text !== 'parent final answer') throw new Error('floor: wrong answer')
}

// ---------------------------------------------------------------------------------------------
// OpenAI Agents SDK: agent.asTool() with fake Models, tracing disabled.

// The peers are imported when their system is built: a fresh process measuring our side never loads them.
async function openaiSystem() {
  const { Agent: OAgent, Runner, setTracingDisabled, Usage: OUsage } = await import('@openai/agents')
  class FakeModel implements Model {
    constructor(private readonly reply: (request: ModelRequest) => ModelResponse['output']) {}
    async getResponse(request: ModelRequest): Promise<ModelResponse> {
      return { usage: new OUsage({ requests: 1, inputTokens: 10, outputTokens: 5, totalTokens: 15 }), output: this.reply(request) }
    }
    // eslint-disable-next-line require-yield
    async *getStreamedResponse(): AsyncIterable<never> {
      throw new Error('not used')
    }
  }

  const message = (value: string) => [{
    type: 'message' as const, role: 'assistant' as const, status: 'completed' as const,
    content: [{ type: 'output_text' as const, text: value }],
  }]

  setTracingDisabled(true)
  const child = new OAgent({ name: 'child', instructions: 'You are a helper.', model: new FakeModel(() => message('child answer')) })
  const subagent = child.asTool({ toolName: 'subagent', toolDescription: 'Delegate a task to a child agent.' })
  let n = 0
  const parent = new OAgent({
    name: 'parent',
    instructions: 'You are the parent.',
    tools: [subagent],
    model: new FakeModel((request) => {
      const input = request.input
      const answered = Array.isArray(input) && input.some((item) => (item as { type?: string }).type === 'function_call_result')
      if (answered) return message('parent final answer')
      return [{ type: 'function_call' as const, callId: `call_${++n}`, name: 'subagent', status: 'completed' as const, arguments: JSON.stringify({ input: `${CHILD}look something up` }) }]
    }),
  })
  const runner = new Runner({ tracingDisabled: true })
  return async () => {
    const result = await runner.run(parent, 'do the task')
    if (result.finalOutput !== 'parent final answer') throw new Error(`openai-agents: wrong answer ${JSON.stringify(result.finalOutput)}`)
  }
}

// ---------------------------------------------------------------------------------------------
// Vercel AI SDK 6: generateText with mock models; the child is a generateText wrapped as a tool.

const v3usage = { inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 5, text: 5, reasoning: 0 } }

async function aiSdkSystem() {
  const { generateText, stepCountIs, tool } = await import('ai')
  const { MockLanguageModelV3 } = await import('ai/test')
  const childModel = new MockLanguageModelV3({
    doGenerate: async () => ({ content: [{ type: 'text', text: 'child answer' }], finishReason: { unified: 'stop', raw: 'stop' }, usage: v3usage, warnings: [] }),
  })
  let n = 0
  const parentModel = new MockLanguageModelV3({
    doGenerate: async (options) => {
      const answered = options.prompt.some((m) => m.role === 'tool')
      if (answered) return { content: [{ type: 'text', text: 'parent final answer' }], finishReason: { unified: 'stop', raw: 'stop' }, usage: v3usage, warnings: [] }
      return {
        content: [{ type: 'tool-call', toolCallId: `call_${++n}`, toolName: 'subagent', input: JSON.stringify({ description: 'look something up', prompt: `${CHILD}look something up` }) }],
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage: v3usage, warnings: [],
      }
    },
  })
  const tools = {
    subagent: tool({
      description: 'Delegate a task to a child agent.',
      inputSchema: z.object({ description: z.string(), prompt: z.string() }),
      execute: async ({ prompt }) => (await generateText({ model: childModel, system: 'You are a helper.', prompt })).text,
    }),
  }
  return async () => {
    const result = await generateText({ model: parentModel, system: 'You are the parent.', prompt: 'do the task', tools, stopWhen: stepCountIs(5) })
    if (result.text !== 'parent final answer') throw new Error(`ai-sdk: wrong answer ${JSON.stringify(result.text)}`)
  }
}

export const OVERHEAD = {
  floor: 'floor (3 model calls, no framework)',
  spawn: 'ours: subagent → spawn',
  fork: 'ours: subagent → fork',
  openai: 'OpenAI Agents SDK (asTool)',
  aisdk: 'Vercel AI SDK (generateText tool)',
} as const
export type OverheadSystem = keyof typeof OVERHEAD

export interface BuiltSystem { run: () => Promise<void>; stop(): Promise<void> }

const none = async () => {}

/** One system of section 1, ready to run (and to stop): built alone, for a fresh process of its own, or with the others. */
export async function buildSystem(key: OverheadSystem): Promise<BuiltSystem> {
  if (key === 'floor') return { run: floor, stop: none }
  if (key === 'openai') return { run: await openaiSystem(), stop: none }
  if (key === 'aisdk') return { run: await aiSdkSystem(), stop: none }
  const h = await host({ model: delegationModel(key === 'spawn' ? 'subagent' : 'subagent_fork') })
  // A host keeps its reference to the agent runtime; going through `ctx.agents` on every call
  // would measure cordis' caller-tracing proxy (tens of µs), not delegation.
  const agents = withoutCallerTracing(h.ctx.agents)
  return {
    run: async () => {
      const agent = agents.create({})
      const result = await agent.run('do the task')
      if (result.text !== 'parent final answer' || result.toolCalls !== 1) throw new Error(`ours: ${JSON.stringify(result)}`)
      await agent.dispose()
    },
    stop: async () => {
      if (h.ctx.subagents.runs().length) throw new Error('live runs left')
      await h.stop()
    },
  }
}

export interface OverheadResult {
  stats: Record<string, Stats>
  rounds: number
  batch: number
}

/** Section 1 in one process: every system interleaved, by the process' CPU time (each round a pair for the targets' paired ratios). */
export async function overhead(options: { rounds: number; batch: number; warmup: number }): Promise<OverheadResult> {
  const keys = Object.keys(OVERHEAD) as OverheadSystem[]
  const built: BuiltSystem[] = []
  try {
    for (const key of keys) built.push(await buildSystem(key))
    const result = await interleave(Object.fromEntries(keys.map((key, i) => [OVERHEAD[key], built[i].run])), { ...options, clock: 'CPU' })
    return { stats: result, rounds: options.rounds, batch: options.batch }
  } finally {
    for (const system of built) await system.stop()
  }
}

