// Our transcript and tool specs in the shapes a ChatLuna (LangChain) chat model takes, and its reply
// back in ours. Messages go as plain message-likes (`{ role, content, tool_calls }`), which LangChain
// turns into its own message classes: whichever copy of LangChain ChatLuna runs, no class of ours
// crosses. Tools go as LangChain tools whose schema is our JSON Schema (never called: ctx.agents'
// loop runs the calls).
import { DynamicStructuredTool, type StructuredToolInterface } from '@langchain/core/tools'
import type { FinishReason, GenerateRequest, GenerateResponse, Message, ModelToolCall } from '@cordis-subagents/agent'
import type { ToolSpec } from '@cordis-subagents/tools'
import type { ChatLunaReply } from './chatluna.js'

export function toMessageLikes(system: string | undefined, messages: readonly Message[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = system ? [{ role: 'system', content: system }] : []
  for (const message of messages) {
    if (message.role === 'user') out.push({ role: 'user', content: message.content })
    else if (message.role === 'tool') out.push({ role: 'tool', content: message.content, tool_call_id: message.toolCallId, name: message.name })
    else {
      const calls = message.toolCalls ?? []
      out.push({
        role: 'assistant',
        content: message.content,
        ...calls.length ? { tool_calls: calls.map((call) => ({ id: call.id, name: call.name, args: call.input, type: 'tool_call' })) } : {},
      })
    }
  }
  return out
}

export function toLangChainTools(specs: readonly ToolSpec[]): StructuredToolInterface[] {
  return specs.map((spec) => new DynamicStructuredTool({
    name: spec.name,
    description: spec.description,
    // A copy: ctx.tools hands out frozen schemas, and LangChain's JSON Schema validator marks the one it gets.
    schema: structuredClone(spec.parameters) as Record<string, unknown>,
    func: async () => { throw new Error(`${spec.name} runs in ctx.agents' loop, not in ChatLuna`) },
  }) as unknown as StructuredToolInterface)
}

/** The reply's text: a string, or the text parts of a content array. */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  return content.map((part) => (part && typeof part === 'object' && (part as { type?: unknown }).type === 'text' ? String((part as { text?: unknown }).text ?? '') : '')).join('')
}

function finishOf(reply: ChatLunaReply, calls: number): FinishReason {
  if (calls > 0) return 'tool-calls'
  const reason = reply.response_metadata?.finish_reason ?? reply.response_metadata?.stop_reason
  if (reason === 'length' || reason === 'max_tokens') return 'length'
  if (reason === 'content_filter' || reason === 'refusal') return 'refusal'
  return 'stop'
}

export function fromReply(reply: ChatLunaReply, request: Pick<GenerateRequest, 'maxToolCalls'>): GenerateResponse {
  const all = reply.tool_calls ?? []
  const max = request.maxToolCalls ?? all.length
  const toolCalls: ModelToolCall[] = all.slice(0, max).map((call, index) => ({
    id: call.id || `chatluna-call-${index}`,
    name: call.name,
    input: call.args ?? {},
  }))
  const usage = reply.usage_metadata
  return {
    text: textOf(reply.content),
    toolCalls,
    finishReason: finishOf(reply, toolCalls.length),
    ...usage ? { usage: { inputTokens: usage.input_tokens ?? 0, outputTokens: usage.output_tokens ?? 0 } } : {},
    ...all.length > max ? { droppedToolCalls: all.length - max } : {},
  }
}
