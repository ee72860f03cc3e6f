import type { AgentErrorCode } from './errors.js'
import type { DelegationAccount } from './children-account.js'
import type { ToolImage, ToolResult, ToolSpec, ToolUpdate } from '@cordis-subagents/tools'
import type { AbortScope, BudgetBreach, PendingQuestion, Usage, WorkCounts } from '@cordis-subagents/shared'

/** A tool call as a model emitted it. */
export interface ModelToolCall {
  id: string
  name: string
  input: unknown
  /**
   * Set by a model adapter when the call's arguments could not be decoded (e.g. invalid JSON).
   * The loop answers such a call with an error result instead of running the tool.
   */
  invalidInput?: string
}

/** Our own transcript format. Never store a vendor SDK's message objects. */
export type Message = UserMessage | AssistantMessage | ToolMessage

export interface UserMessage {
  role: 'user'
  content: string
}

export interface AssistantMessage {
  role: 'assistant'
  content: string
  toolCalls?: ModelToolCall[]
}

export interface ToolMessage {
  role: 'tool'
  toolCallId: string
  name: string
  content: string
  isError?: boolean
  /** The tool result's images (`ToolResult.images`), for models that accept images. */
  images?: readonly ToolImage[]
}

export type FinishReason = 'stop' | 'tool-calls' | 'length' | 'refusal' | 'error' | 'other'

export interface GenerateRequest {
  system?: string
  /** Read-only: a view shared with the transcript (it never changes after the call). */
  messages: readonly Message[]
  tools: ToolSpec[]
  signal: AbortSignal
  maxTokens?: number
  /** The part after the colon of a model ref `name:modelId`. */
  modelId?: string
  /**
   * The most tool calls of this step that will run (the agent's `maxToolCallsPerStep`). An adapter
   * should stop decoding calls past it and only count them in `droppedToolCalls`.
   */
  maxToolCalls?: number
  /**
   * `'gate'`: the runtime's model gate retries rate limits itself. An adapter should then not retry
   * an HTTP 429 or 503 on its own, and throw a `RateLimitedError` (code `RATE_LIMITED`) naming its
   * endpoint and the announced wait instead. Absent: the adapter handles them as it always did.
   */
  rateLimits?: 'gate'
  /**
   * A typed result: the reply must be JSON matching `schema` (an object schema). Set only for a model
   * whose `structuredOutput` is true; an adapter passes it as its API's structured output.
   */
  output?: { name: string; schema: Record<string, unknown> }
}

export interface GenerateResponse {
  text: string
  toolCalls: ModelToolCall[]
  finishReason: FinishReason
  usage?: Usage
  /** Why the model stopped, when it is not obvious (e.g. an HTTP error). Never contains secrets. */
  diagnostic?: string
  /** Tool calls the model made past `request.maxToolCalls` that the adapter did not decode (counted only). */
  droppedToolCalls?: number
  /** The model that answered, as the server names it (may differ from the one asked for). Traces only. */
  model?: string
  /** The server's id of this response (e.g. a chat completion's `id`). Traces only. */
  id?: string
}

/** What a model plugin provides. `generate` may throw; the loop turns that into an `error` stop. */
export interface ChatModel {
  generate(request: GenerateRequest): Promise<GenerateResponse>
  /**
   * The endpoint a call with this `modelId` goes to, as the model gate keys its shared backoff
   * (e.g. the base URL and the model id): calls of every model that names the same key pause
   * together. Absent: the registered name (and `:modelId`).
   */
  rateLimitKey?(modelId: string | undefined): string
  /**
   * True when `generate` honours `request.output` (structured outputs). Otherwise a run with an
   * output schema offers the model a `final_answer` tool with that schema instead.
   */
  readonly structuredOutput?: boolean
  /** Where calls go (host name or address, and port), for traces' `server.address` / `server.port`. */
  readonly server?: { readonly address: string; readonly port?: number }
}

/**
 * `timeout` and `budget` mean a limit, not a person, ended the run (`aborted` is a cancel).
 * `max-steps` is the per-turn step limit of one agent; `budget` a limit of the delegation tree.
 */
export type StopReason = 'completed' | 'aborted' | 'error' | 'max-tokens' | 'refusal' | 'max-steps' | 'timeout' | 'budget'
  /** The turn is parked on a question (`RunResult.question`); `agent.resume(answer)` continues it. */
  | 'pending'
  /** The host interrupted the turn (`agent.interrupt()`); the agent is idle and keeps its transcript. */
  | 'interrupted'
  /** The run has an output schema and its answer did not match it after the corrections it was given. */
  | 'invalid_output'

export interface RunResult {
  /** The last non-empty assistant text of this run (partial text survives abort and truncation). */
  text: string
  stopReason: StopReason
  diagnostic?: string
  /** Tokens this run spent: the agent's own model calls plus what its tools report (delegated). */
  usage: Usage
  steps: number
  toolCalls: number
  /** Work of this run: its own model calls, tool calls and delegations, and its children trees' (delegated). */
  work: { own: WorkCounts; delegated: WorkCounts }
  /** With `stopReason: 'budget'`: which limit, its value, and the spend. */
  budget?: BudgetBreach
  /** With `stopReason: 'pending'`: what the parked turn waits on. */
  question?: PendingQuestion
  /** With `stopReason: 'error'` from a failure of ours that has a code: `HOOK_FAILED` (an operator's hook threw or answered oddly). */
  code?: AgentErrorCode
  /** A root run that delegated: every delegation of its tree and its state (set by `ctx.subagents`; see its README). */
  children?: DelegationAccount
  /** With an output schema and `stopReason: 'completed'`: the answer, validated (`text` is its JSON). */
  value?: unknown
}

export type AgentEvent =
  | { type: 'step-start'; step: number }
  | { type: 'step-end'; step: number; finishReason: FinishReason; usage?: Usage }
  | { type: 'text'; step: number; text: string }
  | { type: 'tool-call'; step: number; call: ModelToolCall }
  | { type: 'tool-update'; step: number; toolCallId: string; name: string; update: ToolUpdate }
  | { type: 'tool-result'; step: number; toolCallId: string; name: string; result: ToolResult }
  /** A message from the agent's inbox, read before the model call of `step`; `structured`: a typed background result's value. */
  | { type: 'message'; step: number; content: string; structured?: unknown }
  /** The turn would end but holds are open (see `Agent.inbox`): it waits for a message or for them to close. */
  | { type: 'waiting'; step: number; holds: number }
  /** The turn parked on `question` (a tool suspended, or a budget handler asked to suspend); the run returns `pending`. */
  | { type: 'pending'; step: number; question: PendingQuestion }
  /** `agent.resume(answer)` continues the turn parked on question `questionId`; `agent.withdraw` too (`withdrawn`, no answer). */
  | { type: 'resumed'; step: number; questionId: string; withdrawn?: true }

export interface RunOptions {
  signal?: AbortSignal
  /**
   * The caller's abort as an `AbortScope` (@cordis-subagents/shared) instead of `signal` (one or the other): no
   * `AbortSignal` is made for the wait (the service's runs pass theirs to an in-process child).
   */
  abortScope?: AbortScope
  onEvent?: (event: AgentEvent) => void
  /**
   * For a root agent's run (one that owns its tree's budget): called synchronously after every
   * charge anywhere in the run's tree, with the tree's cumulative spend. A host serving the agent
   * to a parent elsewhere reports it up (see the crossing in @cordis-subagents/shared); coalesce
   * before sending. Ignored for an agent whose budget was carved from a parent's.
   */
  onSpend?: (spent: Readonly<BudgetSpend>) => void
}

export interface ResumeOptions extends RunOptions {
  /**
   * The question to answer: one of `agent.waitingOn` (default: the first, `agent.parked`). Every
   * call of the parked step suspended on it gets the answer; calls on other questions keep waiting.
   */
  questionId?: string
}

export interface AgentUsage {
  /** Tokens spent by this agent's own model calls. */
  own: Usage
  /** Tokens reported by tool results, e.g. by child agents. */
  delegated: Usage
  readonly total: Usage
}

export interface AgentWork {
  /** Model calls and tool calls of this agent, and the delegations it started. */
  own: WorkCounts
  /** What the trees of its delegations did (as their results reported it). */
  delegated: WorkCounts
  readonly total: WorkCounts
}

/**
 * Limits of one run and everything below it. Omitted means "no limit of its own" (the parent's
 * remaining budget and the deployment's ceilings still apply).
 */
export interface BudgetLimits {
  /** Model calls of this run and every run below it. */
  maxSteps?: number
  /** Tokens (input + output) of this run and every run below it. */
  maxTokens?: number
  /** Tool calls of this run and every run below it. */
  maxToolCalls?: number
  /** Wall time of this run, children included, in ms. */
  maxWallMs?: number
  /** Delegations started below this run (all depths). */
  maxChildren?: number
  /** Delegated runs of this tree working at once (applies where the tree's root run sets it). */
  maxConcurrent?: number
  /** Deepest depth a run below this one may have (root agents are depth 0). */
  maxDepth?: number
}

/** What a budget node has spent: its own run and every run below it. */
export interface BudgetSpend {
  steps: number
  tokens: number
  toolCalls: number
  children: number
}

/** A resolved model, as the turn hands it to the gate. */
export interface GateTarget {
  model: ChatModel
  /** The name it is registered under. */
  name: string
  modelId?: string
}
