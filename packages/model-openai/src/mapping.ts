import { randomUUID } from 'node:crypto'
import type OpenAI from 'openai'
import type { FinishReason, GenerateResponse, Message, ModelToolCall } from '@cordis-subagents/agent'
import { countOf, isCount, nestingDepth, reportedCount, type Usage } from '@cordis-subagents/shared'
import type { ToolSpec } from '@cordis-subagents/tools'
import { MAX_JSON_DEPTH } from './capped-json.js'

type ChatMessage = OpenAI.Chat.ChatCompletionMessageParam
type ChatTool = OpenAI.Chat.ChatCompletionTool

/** How much of a malformed `arguments` string is quoted back in `invalidInput`. */
const RAW_ARGUMENTS_LIMIT = 200

/**
 * Our transcript → chat-completions `messages`. `system` becomes the first message. An
 * assistant turn with tool calls and no text sends `content: null` (what OpenAI itself returns,
 * and what strict servers accept); a failed tool result is prefixed with `Error:` unless its
 * text already says so, because the chat API has no error flag for tool messages. With
 * `images` (a model that accepts images), the images of a run of tool results go out as one user
 * message of `image_url` parts right after that run (a tool message carries text only).
 */
export function toChatMessages(
  system: string | undefined, messages: readonly Message[], options: { images?: boolean } = {},
): ChatMessage[] {
  const out: ChatMessage[] = []
  if (system) out.push({ role: 'system', content: system })
  let images: ImageParts | undefined
  for (const message of messages) {
    if (images && message.role !== 'tool') images = flushImages(out, images)
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
        if (options.images && message.images?.length) images = withImages(images, message.name, message.images)
        break
      default:
        throw new TypeError(`Unknown transcript message role: ${JSON.stringify((message as { role?: unknown }).role)}`)
    }
  }
  if (images) flushImages(out, images)
  return out
}

type ImageParts = OpenAI.Chat.ChatCompletionContentPart[]

/** Adds a tool result's images (labelled with the tool's name) to the parts of the pending user message. */
function withImages(parts: ImageParts | undefined, tool: string, images: readonly { mimeType: string; data: string }[]): ImageParts {
  const out = parts ?? []
  out.push({ type: 'text', text: `Image${images.length > 1 ? 's' : ''} from the ${tool} tool result:` })
  for (const image of images) out.push({ type: 'image_url', image_url: { url: `data:${image.mimeType};base64,${image.data}` } })
  return out
}

function flushImages(out: ChatMessage[], parts: ImageParts): undefined {
  out.push({ role: 'user', content: parts })
  return undefined
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
function decodeArguments(raw: unknown): { input: unknown; invalidInput?: string } {
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
  // The body's own nesting bound does not reach inside this string: deeper input would overflow the stack where it is used
  // (a schema check, the next request's encoding) and break the agent's every later turn.
  if (nestingDepth(value, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
    return { input: {}, invalidInput: `Tool call arguments nest deeper than ${MAX_JSON_DEPTH} levels: ${truncate(raw)}. Call the tool again with a flatter object.` }
  }
  return { input: value }
}

export function truncate(text: string, limit = RAW_ARGUMENTS_LIMIT): string {
  return text.length <= limit ? text : `${text.slice(0, limit)}… (${text.length - limit} more chars)`
}

/** The response's usage: counts that are not whole non-negative numbers are 0 (cached tokens: left out), as the agent reads them. */
function toUsage(usage: OpenAI.CompletionUsage | null | undefined): Usage | undefined {
  if (!usage || typeof usage !== 'object') return undefined
  const result: Usage = { inputTokens: countOf(usage.prompt_tokens), outputTokens: countOf(usage.completion_tokens) }
  const cached = reportedCount(usage.prompt_tokens_details?.cached_tokens)
  if (cached !== undefined) result.cachedInputTokens = Math.min(cached, result.inputTokens)
  return result
}

/** Thrown by `fromCompletion` when the body is not a chat completion at all. */
export class MalformedResponseError extends Error {
  override name = 'MalformedResponseError'
}

/**
 * Per-response ceilings of the normaliser: past them it stops building objects, so a response
 * with 200,000 tool calls costs what one with the cap costs (the rest is only counted).
 */
export const RESPONSE_LIMITS = {
  /** Elements of any one array of the body kept when it is read (the rest are skipped unparsed and counted). */
  items: 1024,
  /** Tool calls decoded from one response when the request names no lower cap (`maxToolCalls`). */
  toolCalls: 1024,
  /** Choices looked at (we never ask for n > 1; a few servers split parallel calls one per choice). */
  choices: 1024,
  /** Content parts joined into the text of one choice. */
  contentParts: 1024,
} as const

export interface CompletionLimits {
  /** Most tool calls to decode; the others are counted in `droppedToolCalls`. At most `RESPONSE_LIMITS.toolCalls`. */
  maxToolCalls?: number
  /** Tool calls already cut while the body was read (they are added to `droppedToolCalls`). */
  droppedToolCalls?: number
}

/**
 * A chat completion → our response. `finish_reason`: stop → stop, tool_calls (and the legacy
 * function_call) → tool-calls, length → length, content_filter → refusal; a `message.refusal`
 * → refusal with the refusal as text; none → stop; anything else → other (the agent ends the run
 * as `error`). Servers that report `stop` (or nothing) while returning tool calls get
 * `tool-calls`, so the loop runs the calls. Every per-response count is capped (`RESPONSE_LIMITS`):
 * tool calls past the cap are counted in `droppedToolCalls`, never decoded.
 */
export function fromCompletion(completion: OpenAI.Chat.ChatCompletion, limits: CompletionLimits = {}): GenerateResponse {
  const { choices, scanned } = usableChoices(completion?.choices)
  const first = choices[0]
  if (!first) {
    throw new MalformedResponseError('the response has no choices[0].message; the server does not look like an OpenAI chat-completions endpoint')
  }
  const usage = toUsage(completion.usage)
  const asked = limits.maxToolCalls
  const maxToolCalls = isCount(asked)
    ? Math.min(asked, RESPONSE_LIMITS.toolCalls)
    : RESPONSE_LIMITS.toolCalls
  // We never ask for n > 1, so extra choices are a server splitting one answer (e.g. parallel tool
  // calls one per choice): their tool calls are merged in order, never silently dropped.
  const alreadyDropped = Math.max(0, limits.droppedToolCalls ?? 0) + uncounted(completion.choices, scanned)
  const { toolCalls, dropped } = decodeToolCalls(choices, maxToolCalls, alreadyDropped)
  let refusal: string | undefined
  let text = contentText(first.message.content)
  for (const choice of choices) {
    const value = choice.message.refusal
    if (!refusal && typeof value === 'string' && value) refusal = value
    if (!text) text = contentText(choice.message.content)
  }
  let finishReason: FinishReason
  if (refusal) {
    finishReason = 'refusal'
    text = refusal
  } else {
    const reason = choices.length === 1 ? first.finish_reason
      : choices.find((choice) => choice.finish_reason === 'length')?.finish_reason ?? first.finish_reason
    finishReason = mapFinishReason(reason, toolCalls.length + dropped > 0)
  }
  const response: GenerateResponse = { text, toolCalls, finishReason }
  if (dropped) response.droppedToolCalls = dropped
  if (usage) response.usage = usage
  const model = label(completion.model)
  if (model) response.model = model
  const id = label(completion.id)
  if (id) response.id = id
  return response
}

/** Longest server-given name or id kept (traces only; a longer one is dropped, not cut). */
const LABEL_LENGTH = 256

/** A server-given name or id: a non-empty string of at most `LABEL_LENGTH` characters, else nothing. */
function label(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 && value.length <= LABEL_LENGTH ? value : undefined
}

type Choice = OpenAI.Chat.ChatCompletion.Choice

/** The first `RESPONSE_LIMITS.choices` choices that carry a message, and how many entries were looked at. */
function usableChoices(raw: unknown): { choices: Choice[]; scanned: number } {
  const choices: Choice[] = []
  if (!Array.isArray(raw)) return { choices, scanned: 0 }
  let i = 0
  for (; i < raw.length && choices.length < RESPONSE_LIMITS.choices; i++) {
    const choice = raw[i] as Choice | null | undefined
    if (choice && typeof choice === 'object' && choice.message && typeof choice.message === 'object') choices.push(choice)
  }
  return { choices, scanned: i }
}

/** Tool calls in the choices past the ones looked at: counted, never decoded. */
function uncounted(raw: readonly unknown[], from: number): number {
  let n = 0
  for (let i = from; i < raw.length; i++) {
    const calls = (raw[i] as { message?: { tool_calls?: unknown } } | null)?.message?.tool_calls
    if (Array.isArray(calls)) n += countCalls(calls, 0)
  }
  return n
}

function mapFinishReason(reason: string | null | undefined, hasToolCalls: boolean): FinishReason {
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
  if (!Array.isArray(content)) return ''
  let text = ''
  const parts = Math.min(content.length, RESPONSE_LIMITS.contentParts)
  for (let i = 0; i < parts; i++) {
    const part = content[i]
    if (part && typeof part === 'object' && typeof part.text === 'string') text += part.text
  }
  return text
}

/** The tool calls of the choices, in order, decoded up to `max`; the calls past it are only counted. */
function decodeToolCalls(choices: readonly Choice[], max: number, alreadyDropped: number): { toolCalls: ModelToolCall[]; dropped: number } {
  const seen = new Set<string>()
  const result: ModelToolCall[] = []
  let dropped = alreadyDropped
  for (const choice of choices) {
    const calls: unknown = choice.message.tool_calls
    if (!Array.isArray(calls)) continue
    for (let i = 0; i < calls.length; i++) {
      const call = calls[i]
      if (!call || typeof call !== 'object') continue
      if (result.length >= max) {
        dropped += countCalls(calls, i)
        break
      }
      result.push(decodeToolCall(call, seen, result.length))
    }
  }
  return { toolCalls: result, dropped }
}

/** Tool-call entries of `calls` from `start` on (objects only, as `decodeToolCalls` would take them). */
function countCalls(calls: readonly unknown[], start: number): number {
  let n = 0
  for (let i = start; i < calls.length; i++) if (calls[i] && typeof calls[i] === 'object') n++
  return n
}

function decodeToolCall(call: any, seen: Set<string>, index: number): ModelToolCall {
  let id = typeof call.id === 'string' && call.id ? call.id : `call_${randomUUID().replaceAll('-', '').slice(0, 24)}`
  // Every id must be unique within the transcript; a few servers repeat ids in one response.
  while (seen.has(id)) id = `${id}_${index}`
  seen.add(id)
  if (call.type === 'custom' && call.custom) {
    return { id, name: String(call.custom.name ?? ''), input: {}, invalidInput: 'Custom (free-form) tool calls are not supported; call the tool with JSON arguments.' }
  }
  const fn = call.function ?? {}
  const name = typeof fn.name === 'string' ? fn.name : ''
  const decoded = decodeArguments(fn.arguments)
  const out: ModelToolCall = { id, name, input: decoded.input }
  if (decoded.invalidInput !== undefined) out.invalidInput = decoded.invalidInput
  return out
}
