import { randomUUID } from 'node:crypto'
import type OpenAI from 'openai'
import type { FinishReason, GenerateResponse, Message, ModelToolCall } from '@cordis-subagents/agent'
import type { ToolSpec, Usage } from '@cordis-subagents/tools'

type ChatMessage = OpenAI.Chat.ChatCompletionMessageParam
type ChatTool = OpenAI.Chat.ChatCompletionTool

/** How much of a malformed `arguments` string is quoted back in `invalidInput`. */
export const RAW_ARGUMENTS_LIMIT = 200

/**
 * Our transcript → chat-completions `messages`. `system` becomes the first message. An
 * assistant turn with tool calls and no text sends `content: null` (what OpenAI itself returns,
 * and what strict servers accept); a failed tool result is prefixed with `Error:` unless its
 * text already says so, because the chat API has no error flag for tool messages.
 */
export function toChatMessages(system: string | undefined, messages: readonly Message[]): ChatMessage[] {
  const out: ChatMessage[] = []
  if (system) out.push({ role: 'system', content: system })
  for (const message of messages) {
    switch (message.role) {
      case 'user':
        out.push({ role: 'user', content: message.content })
        break
      case 'assistant': {
        const calls = message.toolCalls ?? []
        if (!calls.length) {
          out.push({ role: 'assistant', content: message.content })
          break
        }
        out.push({
          role: 'assistant',
          content: message.content ? message.content : null,
          tool_calls: calls.map((call) => ({
            id: call.id,
            type: 'function' as const,
            function: { name: call.name, arguments: encodeArguments(call) },
          })),
        })
        break
      }
      case 'tool':
        out.push({
          role: 'tool',
          tool_call_id: message.toolCallId,
          content: message.isError && !/^error\b/i.test(message.content) ? `Error: ${message.content}` : message.content,
        })
        break
      default:
        throw new TypeError(`Unknown transcript message role: ${JSON.stringify((message as { role?: unknown }).role)}`)
    }
  }
  return out
}

function encodeArguments(call: ModelToolCall): string {
  if (call.invalidInput !== undefined) return '{}'
  return JSON.stringify(call.input ?? {}) ?? '{}'
}

/** Registry tool specs → chat-completions `tools` (the caller omits the key when this is empty). */
export function toChatTools(tools: readonly ToolSpec[]): ChatTool[] {
  return tools.map((tool) => ({
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  }))
}

/** Decodes one tool call's `arguments`. Never throws: undecodable input is reported in `invalidInput`. */
export function decodeArguments(raw: unknown): { input: unknown; invalidInput?: string } {
  if (raw === undefined || raw === null || (typeof raw === 'string' && raw.trim() === '')) return { input: {} }
  // A few servers send the arguments as an object instead of a JSON string.
  if (typeof raw === 'object' && !Array.isArray(raw)) return { input: raw }
  if (typeof raw !== 'string') {
    return { input: {}, invalidInput: `Tool call arguments must be a JSON object, got ${truncate(JSON.stringify(raw) ?? String(raw))}.` }
  }
  let value: unknown
  try {
    value = JSON.parse(raw)
    // Some models double-encode: "{\"a\":1}".
    if (typeof value === 'string') value = JSON.parse(value)
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error)
    return {
      input: {},
      invalidInput: `Tool call arguments are not valid JSON (${truncate(reason, 120)}). Raw arguments: ${truncate(raw)}. Call the tool again with a JSON object.`,
    }
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { input: {}, invalidInput: `Tool call arguments must be a JSON object, got: ${truncate(raw)}. Call the tool again with a JSON object.` }
  }
  return { input: value }
}

export function truncate(text: string, limit = RAW_ARGUMENTS_LIMIT): string {
  return text.length <= limit ? text : `${text.slice(0, limit)}… (${text.length - limit} more chars)`
}

export function toUsage(usage: OpenAI.CompletionUsage | null | undefined): Usage | undefined {
  if (!usage || typeof usage !== 'object') return undefined
  const result: Usage = { inputTokens: count(usage.prompt_tokens), outputTokens: count(usage.completion_tokens) }
  const cached = usage.prompt_tokens_details?.cached_tokens
  if (typeof cached === 'number' && Number.isFinite(cached)) result.cachedInputTokens = cached
  return result
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0
}

/** Thrown by `fromCompletion` when the body is not a chat completion at all. */
export class MalformedResponseError extends Error {
  override name = 'MalformedResponseError'
}

/**
 * A chat completion → our response. `finish_reason`: stop → stop, tool_calls (and the legacy
 * function_call) → tool-calls, length → length, content_filter → refusal; a `message.refusal`
 * → refusal with the refusal as text; none → stop; anything else → other (the agent ends the run
 * as `error`). Servers that report `stop` (or nothing) while returning tool calls get
 * `tool-calls`, so the loop runs the calls.
 */
export function fromCompletion(completion: OpenAI.Chat.ChatCompletion): GenerateResponse {
  const choices = Array.isArray(completion?.choices)
    ? completion.choices.filter((choice) => choice && typeof choice === 'object' && choice.message && typeof choice.message === 'object')
    : []
  const first = choices[0]
  if (!first) {
    throw new MalformedResponseError('the response has no choices[0].message; the server does not look like an OpenAI chat-completions endpoint')
  }
  const usage = toUsage(completion.usage)
  // We never ask for n > 1, so extra choices are a server splitting one answer (e.g. parallel tool
  // calls one per choice): their tool calls are merged in order, never dropped.
  const calls = choices.flatMap((choice) => (Array.isArray(choice.message.tool_calls) ? choice.message.tool_calls : []))
  const toolCalls = decodeToolCalls(calls)
  const refusal = choices.map((choice) => choice.message.refusal).find((value) => typeof value === 'string' && value)
  let text = contentText(first.message.content) || (choices.map((choice) => contentText(choice.message.content)).find(Boolean) ?? '')
  let finishReason: FinishReason
  if (refusal) {
    finishReason = 'refusal'
    text = refusal
  } else {
    const reason = choices.length === 1 ? first.finish_reason
      : choices.find((choice) => choice.finish_reason === 'length')?.finish_reason ?? first.finish_reason
    finishReason = mapFinishReason(reason, toolCalls.length > 0)
  }
  const response: GenerateResponse = { text, toolCalls, finishReason }
  if (usage) response.usage = usage
  return response
}

export function mapFinishReason(reason: string | null | undefined, hasToolCalls: boolean): FinishReason {
  switch (reason) {
    case 'length': return 'length'
    case 'content_filter': return 'refusal'
    case 'tool_calls':
    case 'function_call': return 'tool-calls'
    // A missing finish_reason (some local servers) is an ordinary end of the answer.
    case 'stop':
    case null:
    case undefined:
    case '':
      return hasToolCalls ? 'tool-calls' : 'stop'
    default:
      return hasToolCalls ? 'tool-calls' : 'other'
  }
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content
  if (Array.isArray(content)) {
    return content.map((part) => (part && typeof part === 'object' && typeof part.text === 'string' ? part.text : '')).join('')
  }
  return ''
}

function decodeToolCalls(calls: unknown): ModelToolCall[] {
  if (!Array.isArray(calls)) return []
  const seen = new Set<string>()
  const result: ModelToolCall[] = []
  for (const call of calls) {
    if (!call || typeof call !== 'object') continue
    let id = typeof call.id === 'string' && call.id ? call.id : `call_${randomUUID().replaceAll('-', '').slice(0, 24)}`
    // Every id must be unique within the transcript; a few servers repeat ids in one response.
    while (seen.has(id)) id = `${id}_${result.length}`
    seen.add(id)
    if (call.type === 'custom' && call.custom) {
      result.push({ id, name: String(call.custom.name ?? ''), input: {}, invalidInput: 'Custom (free-form) tool calls are not supported; call the tool with JSON arguments.' })
      continue
    }
    const fn = call.function ?? {}
    const name = typeof fn.name === 'string' ? fn.name : ''
    const decoded = decodeArguments(fn.arguments)
    const out: ModelToolCall = { id, name, input: decoded.input }
    if (decoded.invalidInput !== undefined) out.invalidInput = decoded.invalidInput
    result.push(out)
  }
  return result
}
