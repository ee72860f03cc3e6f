import { type Context, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api'
import type { Agent, AgentObserver, GenerateResponse, ModelToolCall, RunResult } from '@cordis-subagents/agent'
import type { ToolResult } from '@cordis-subagents/tools'
import { describeError, headChars, peerText } from '@cordis-subagents/shared'
import { ERROR_TYPE, GEN_AI, listValue, OURS, SERVER } from './attributes.js'
import { bounded, type ContentPolicy } from './content.js'

/** An `execute_tool` span in flight. */
export interface ToolSpan {
  span: Span
  context: Context
}

interface RunSpan {
  span: Span
  context: Context
  chat?: Span
  tools: Map<string, ToolSpan>
  /** Tokens of this run's own model calls. */
  input: number
  output: number
}

/** Where a run's `invoke_agent` span hangs: a delegation's span, a remote parent, or nothing (a new trace). */
export interface RunParent {
  context: Context
  attributes?: Record<string, string | number>
}

export interface RunSpanHost {
  tracer: Tracer
  /** Whether spans are recorded (an SDK is registered); without one, a run with no parent to continue is declined. */
  recording(): boolean
  content: ContentPolicy
  /** Join array attributes into strings (`flatAttributes`). */
  flatAttributes: boolean
  /** The default model ref of the runtime (for agents that name none). */
  defaultModel(): string | undefined
  /** Where calls of a model ref go, when its model says (`ChatModel.server`). */
  serverOf(ref: string | undefined): { address: string; port?: number } | undefined
  /** The parent of a run that begins (in-process child: its delegation; root: a remote parent), if any. */
  parentOf(agent: Agent): RunParent | undefined
}

const STATUS_MESSAGE_LENGTH = 1024
/** Most tool calls of one response recorded in `gen_ai.output.messages` (the rest are counted). */
const MAX_RECORDED_CALLS = 64

/**
 * `invoke_agent`, `chat` and `execute_tool` spans from `ctx.agents`' observer hooks: one span per
 * run, per model call and per tool call, nested as they happened.
 */
export class RunSpans implements AgentObserver {
  private readonly runs = new Map<Agent, RunSpan>()

  constructor(private readonly host: RunSpanHost) {}

  /** The context of an agent's tool call in flight (else of its run in flight), to hang a delegation under. */
  toolContext(agent: Agent, toolCallId: string | undefined): { context: Context; tool?: ToolSpan } | undefined {
    const run = this.runs.get(agent)
    if (!run) return undefined
    const tool = toolCallId === undefined ? undefined : run.tools.get(toolCallId)
    return tool ? { context: tool.context, tool } : { context: run.context }
  }

  runStart(agent: Agent, prompt: string): boolean {
    const { tracer, content } = this.host
    const parent = this.host.parentOf(agent)
    // With no SDK a span records nothing; only a parent's trace context is worth carrying on (to a child elsewhere).
    if (!parent && !this.host.recording()) {
      this.close(agent, 'the next run began')
      return false
    }
    const name = bounded(agent.label ?? 'agent')
    const model = this.modelRef(agent)
    const span = tracer.startSpan(`invoke_agent ${name}`, {
      kind: SpanKind.INTERNAL,
      attributes: {
        [GEN_AI.operation]: 'invoke_agent',
        [GEN_AI.agentId]: bounded(agent.id),
        [GEN_AI.agentName]: name,
        [OURS.depth]: agent.depth,
        ...agent.parent ? { [OURS.parentId]: bounded(agent.parent.id) } : {},
        ...model ? { [GEN_AI.requestModel]: bounded(model) } : {},
        ...parent?.attributes,
        ...content.capture ? { [GEN_AI.inputMessages]: content.messages('user', prompt) } : {},
      },
    }, parent?.context)
    // An agent runs one turn at a time; a stale entry (a run whose end was never seen) is closed.
    this.close(agent, 'the next run began')
    this.runs.set(agent, { span, context: trace.setSpan(parent?.context ?? ROOT_CONTEXT, span), tools: new Map(), input: 0, output: 0 })
    return true
  }

  runEnd(agent: Agent, result: RunResult): void {
    const run = this.runs.get(agent)
    if (!run) return
    this.runs.delete(agent)
    this.endOpen(run, 'the run ended first')
    const { span } = run
    const { own } = result.work
    span.setAttributes({
      [OURS.stopReason]: result.stopReason,
      [GEN_AI.inputTokens]: run.input,
      [GEN_AI.outputTokens]: run.output,
      [OURS.delegatedInputTokens]: Math.max(0, result.usage.inputTokens - run.input),
      [OURS.delegatedOutputTokens]: Math.max(0, result.usage.outputTokens - run.output),
      [OURS.steps]: own.steps,
      [OURS.toolCalls]: own.toolCalls,
      [OURS.delegations]: own.delegations,
    })
    if (result.budget) {
      span.setAttributes({
        [OURS.budgetName]: result.budget.budget, [OURS.budgetLimit]: result.budget.limit, [OURS.budgetSpent]: result.budget.spent,
      })
    }
    if (this.host.content.capture) {
      span.setAttribute(GEN_AI.outputMessages, this.host.content.messages('assistant', result.text, { finish_reason: result.stopReason }))
    }
    if (result.stopReason !== 'completed') {
      const fixed = `The run ended with ${result.stopReason}.`
      fail(span, result.stopReason, this.host.content.capture ? result.diagnostic ?? fixed : fixed)
    }
    span.end()
  }

  modelCallStart(agent: Agent, step: number, model: string | undefined): void {
    const run = this.runs.get(agent)
    if (!run) return
    const ref = model ?? this.host.defaultModel()
    const colon = ref?.indexOf(':') ?? -1
    const provider = ref === undefined ? undefined : bounded(colon < 0 ? ref : ref.slice(0, colon))
    const requested = ref === undefined ? undefined : bounded(colon < 0 ? ref : ref.slice(colon + 1))
    const server = this.host.serverOf(ref)
    run.chat?.end()
    run.chat = this.host.tracer.startSpan(`chat ${requested ?? 'model'}`, {
      kind: SpanKind.CLIENT,
      attributes: {
        [GEN_AI.operation]: 'chat',
        [OURS.step]: step,
        ...provider ? { [GEN_AI.providerName]: provider } : {},
        ...requested ? { [GEN_AI.requestModel]: requested } : {},
        ...server ? { [SERVER.address]: bounded(server.address), ...server.port === undefined ? {} : { [SERVER.port]: server.port } } : {},
      },
    }, run.context)
  }

  modelCallEnd(agent: Agent, _step: number, response: GenerateResponse | undefined, error?: unknown, aborted = false): void {
    const run = this.runs.get(agent)
    const span = run?.chat
    if (!run || !span) return
    run.chat = undefined
    if (!response) {
      // The error's class and stable code are ours to keep; its message is the model's (or its server's) text.
      const name = bounded(error instanceof Error && typeof error.name === 'string' ? error.name : 'Error')
      const rawCode = (error as { code?: unknown } | undefined)?.code
      const code = typeof rawCode === 'string' || typeof rawCode === 'number' ? bounded(String(rawCode)) : undefined
      if (code !== undefined) span.setAttribute(OURS.modelErrorCode, code)
      if (this.host.content.capture) {
        const message = peerText(headChars(describeError(error), STATUS_MESSAGE_LENGTH))
        span.recordException({ name, message })
        fail(span, aborted ? 'aborted' : name, message)
      } else {
        span.recordException({ name })
        fail(span, aborted ? 'aborted' : name, `The model call failed (${code === undefined ? name : `${name}, ${code}`}).`)
      }
      span.end()
      return
    }
    const { usage } = response
    if (usage) {
      run.input += usage.inputTokens
      run.output += usage.outputTokens
      span.setAttributes({
        [GEN_AI.inputTokens]: usage.inputTokens,
        [GEN_AI.outputTokens]: usage.outputTokens,
        ...usage.cachedInputTokens === undefined ? {} : { [GEN_AI.cacheReadTokens]: usage.cachedInputTokens },
        ...usage.rateLimitWaitMs === undefined ? {} : { [OURS.rateLimitWaitMs]: usage.rateLimitWaitMs },
      })
    }
    span.setAttribute(GEN_AI.finishReasons, listValue([response.finishReason], this.host.flatAttributes))
    if (typeof response.model === 'string' && response.model) span.setAttribute(GEN_AI.responseModel, bounded(response.model))
    if (typeof response.id === 'string' && response.id) span.setAttribute(GEN_AI.responseId, bounded(response.id))
    if (this.host.content.capture) {
      // A model's ids and names are its own: bounded like every other name, and at most MAX_RECORDED_CALLS of them.
      const calls = response.toolCalls
      const parts: Record<string, string>[] = [{ type: 'text', content: this.host.content.cut(response.text) }]
      for (const call of calls.slice(0, MAX_RECORDED_CALLS)) parts.push({ type: 'tool_call', id: bounded(call.id), name: bounded(call.name) })
      if (calls.length > MAX_RECORDED_CALLS) parts.push({ type: 'text', content: `[${calls.length - MAX_RECORDED_CALLS} more tool calls not recorded]` })
      span.setAttribute(GEN_AI.outputMessages, JSON.stringify([{
        role: 'assistant',
        parts,
        finish_reason: response.finishReason,
      }]))
    }
    if (response.finishReason === 'error' || response.finishReason === 'other') {
      const fixed = `The model's response ended with ${response.finishReason}.`
      fail(span, response.finishReason, this.host.content.capture ? response.diagnostic ?? fixed : fixed)
    }
    span.end()
  }

  toolCallStart(agent: Agent, step: number, call: ModelToolCall): void {
    const run = this.runs.get(agent)
    if (!run) return
    const name = bounded(call.name)
    const span = this.host.tracer.startSpan(`execute_tool ${name}`, {
      kind: SpanKind.INTERNAL,
      attributes: {
        [GEN_AI.operation]: 'execute_tool',
        [GEN_AI.toolName]: name,
        [GEN_AI.toolType]: 'function',
        [GEN_AI.toolCallId]: bounded(call.id),
        [OURS.step]: step,
        ...this.host.content.capture ? { [GEN_AI.toolArguments]: this.host.content.json(call.input) } : {},
      },
    }, run.context)
    run.tools.set(call.id, { span, context: trace.setSpan(run.context, span) })
  }

  toolCallEnd(agent: Agent, _step: number, call: ModelToolCall, result: ToolResult): void {
    const run = this.runs.get(agent)
    const tool = run?.tools.get(call.id)
    if (!run || !tool) return
    run.tools.delete(call.id)
    const { span } = tool
    if (this.host.content.capture) span.setAttribute(GEN_AI.toolResult, this.host.content.cut(result.content))
    // The result's first line is the tool's text (a failing query may echo its connection string).
    if (result.isError) fail(span, 'tool_error', this.host.content.capture ? firstLine(result.content) : 'The tool call returned an error.')
    span.end()
  }

  /** Ends every span still open (the plugin is being disposed). */
  closeAll(): void {
    for (const agent of [...this.runs.keys()]) this.close(agent, 'telemetry was unloaded')
  }

  private close(agent: Agent, why: string): void {
    const run = this.runs.get(agent)
    if (!run) return
    this.runs.delete(agent)
    this.endOpen(run, why)
    fail(run.span, 'incomplete', `The run's end was not seen: ${why}.`)
    run.span.end()
  }

  private endOpen(run: RunSpan, why: string): void {
    if (run.chat) {
      fail(run.chat, 'incomplete', `The model call's end was not seen: ${why}.`)
      run.chat.end()
      run.chat = undefined
    }
    for (const tool of run.tools.values()) {
      fail(tool.span, 'incomplete', `The tool call's end was not seen: ${why}.`)
      tool.span.end()
    }
    run.tools.clear()
  }

  private modelRef(agent: Agent): string | undefined {
    return agent.model ?? this.host.defaultModel()
  }
}

/** Marks a span failed: status ERROR with a bounded message (cleaned with shared's `peerText`), and `error.type`. */
export function fail(span: Span, type: string, message: string): void {
  span.setAttribute(ERROR_TYPE, bounded(type))
  span.setStatus({ code: SpanStatusCode.ERROR, message: peerText(headChars(message, STATUS_MESSAGE_LENGTH)) })
}

function firstLine(text: string): string {
  const end = text.indexOf('\n')
  return headChars(end < 0 ? text : text.slice(0, end), STATUS_MESSAGE_LENGTH)
}
