import type { Usage } from '@cordis-subagents/shared'
import type { ToolResult } from '@cordis-subagents/tools'
import type { GenerateResponse, Message, ModelToolCall } from './types.js'

// The lifecycle hooks and the metric sink an operator sets on the runtime (`ctx.agents.hooks`,
// `ctx.agents.metrics`) or on one agent (`create({ hooks, metrics })`): their types, and the check
// `create` and the runtime make of them. What runs them during a turn is `hook-run.ts`, made only
// for a turn that has a hook or a sink.

/** Who a hook or a record is about: a plain, frozen copy (a hook gets no handle on the agent itself). */
export interface AgentHookInfo {
  readonly id: string
  readonly parentId?: string
  readonly depth: number
  readonly label?: string
  /** Model ref (`name` or `name:modelId`) when the agent names one. */
  readonly model?: string
}

export interface BeforeLLMEvent {
  readonly agent: AgentHookInfo
  /** The model call about to be made: 1 for the turn's first. */
  readonly step: number
  /** The agent's soul (system prompt), for reading: the model always gets the agent's own. */
  readonly system: string | undefined
  /** The messages about to go to the model (frozen; return a list of your own to send that instead: the transcript keeps every message). */
  readonly messages: readonly Message[]
  /** The turn's signal: a compactor that calls a model passes it on (the turn's abort ends the wait anyway). */
  readonly signal: AbortSignal
}

export interface AfterLLMEvent {
  readonly agent: AgentHookInfo
  readonly step: number
  /** The model's response, made well-formed (as the loop goes on with it). */
  readonly response: Readonly<GenerateResponse>
  readonly signal: AbortSignal
}

export interface BeforeToolEvent {
  readonly agent: AgentHookInfo
  readonly step: number
  /** The call as the model made it (frozen). */
  readonly call: ModelToolCall
  readonly signal: AbortSignal
}

export interface AfterToolEvent {
  readonly agent: AgentHookInfo
  readonly step: number
  readonly call: ModelToolCall
  /** The result the model reads (a call that suspends: its suspended result). */
  readonly result: Readonly<ToolResult>
  readonly signal: AbortSignal
}

/** `undefined`: run the call. `{ refuse: reason }`: do not run it; the model reads the reason as the call's error result. */
export type BeforeToolDecision = undefined | void | { refuse: string }

type Maybe<T> = T | Promise<T>

/**
 * Four lifecycle callbacks around a turn's model and tool calls; each optional, each may be async
 * (awaited, bounded by the turn's abort). A set on an agent replaces the runtime's whole set.
 */
export interface AgentHooks {
  /** Before each model call: may return the messages to send instead (a compactor); `undefined` sends them as they are. */
  beforeLLM?(event: BeforeLLMEvent): Maybe<readonly Message[] | undefined | void>
  /** After each model call that returned a response. */
  afterLLM?(event: AfterLLMEvent): Maybe<void>
  /** Before each tool call that would run: may refuse it with a reason the model reads. */
  beforeTool?(event: BeforeToolEvent): Maybe<BeforeToolDecision>
  /** After each tool call that ran (or was refused by `beforeTool`), with its result. */
  afterTool?(event: AfterToolEvent): Maybe<void>
}

/** One model call or one tool call, as a metric sink receives it. */
export interface MetricRecord {
  kind: 'model' | 'tool'
  agentId: string
  parentId?: string
  /** The agent's turn (one `run` / `wake`, with the resumes of its parked steps): `<agent id>#<n>`, unique in the process. */
  runId: string
  step: number
  /** The model ref (`default` when the agent names none), or the tool's name. */
  name: string
  /** From the call's start (after the model-call gate let it through) to its end. */
  durationMs: number
  /** A model call's tokens, when the model reported them. */
  tokens?: Usage
  /** `refused`: a tool call `beforeTool` or a limit refused. `error`: a model call that threw or ended `error`, a tool's error result. */
  outcome: 'ok' | 'error' | 'aborted' | 'refused'
}

/** Receives one record per model call and per tool call, synchronously; a sink that throws is ignored (with one warning). */
export type MetricSink = (record: MetricRecord) => void

const HOOK_NAMES = ['beforeLLM', 'afterLLM', 'beforeTool', 'afterTool'] as const

/** What is wrong with a hook set (`null` is "none"), or undefined. */
export function hooksProblem(hooks: unknown, where: string): string | undefined {
  if (hooks === undefined || hooks === null) return undefined
  if (typeof hooks !== 'object' || Array.isArray(hooks)) return `${where} must be an object of hooks (${HOOK_NAMES.join(', ')}), or null for none.`
  for (const [key, value] of Object.entries(hooks)) {
    if (!(HOOK_NAMES as readonly string[]).includes(key)) return `${where} has an unknown hook "${key}"; hooks are ${HOOK_NAMES.join(', ')}.`
    if (value !== undefined && typeof value !== 'function') return `${where}.${key} must be a function, got ${typeof value}.`
  }
  return undefined
}

/** What is wrong with a metric sink (`null` is "none"), or undefined. */
export function sinkProblem(sink: unknown, where: string): string | undefined {
  if (sink === undefined || sink === null || typeof sink === 'function') return undefined
  return `${where} must be a function (record) => void, or null for none.`
}
