import { performance } from 'node:perf_hooks'
import { describeError, handleRejection } from '@cordis-subagents/shared'
import type { ToolResult } from '@cordis-subagents/tools'
import { AgentError } from './errors.js'
import { type AgentHookInfo, type AgentHooks, hooksProblem, type MetricRecord, type MetricSink, sinkProblem } from './hooks.js'
import type { GenerateResponse, Message, ModelToolCall } from './types.js'

// The hooks and the metric sink of one leg of a turn, as the loop calls them. Made only when the
// agent's runs have a hook or a sink (`TurnHost.hookRun`): a turn without either never enters this file.

/** The turn's run id (`<agent id>#<n>`), minted when a turn first reports: kept across its legs (a resume). */
const runIds = new WeakMap<object, string>()
let minted = 0

const ROLES = new Set(['user', 'assistant', 'tool'])

type HookName = keyof AgentHooks

/** What a hook run needs of the agent (a `TurnAgent`, named here without it: no import circle). */
export interface HookAgent {
  readonly id: string
  readonly parent?: { readonly id: string }
  readonly depth: number
  readonly label?: string
  readonly model?: string
}

/** The turn's abort (a `TurnAbort`): its signal, and the promise that rejects once it aborts. */
export interface HookAbort {
  readonly signal: AbortSignal
  readonly rejection: Promise<never>
}

/** Warns once about a sink that threw (the runtime's logger; the run goes on). */
export type SinkWarning = (sink: MetricSink, error: unknown) => void

export class HookRun {
  /** The first hook that failed in this leg: the turn ends `error` with it (`HOOK_FAILED`) once the step's calls are answered. */
  failure?: AgentError
  private who?: AgentHookInfo

  constructor(
    private readonly agent: HookAgent,
    private readonly hooks: AgentHooks | undefined,
    private readonly sink: MetricSink | undefined,
    private readonly turn: object,
    private readonly abort: HookAbort,
    private readonly warn: SinkWarning,
  ) {}

  /** The clock of a record's duration (read only when a sink or a hook is set). */
  now(): number {
    return performance.now()
  }

  /**
   * The messages the model call of `step` sends: `messages`, or what `beforeLLM` returned instead
   * (entries with role `system` dropped: the soul is the agent's own, sent apart). Rejects with
   * `HOOK_FAILED` when the hook throws or returns something else than a list of messages, and with
   * the abort reason when the turn is aborted while it waits.
   */
  async beforeLLM(step: number, system: string | undefined, messages: readonly Message[]): Promise<readonly Message[]> {
    const hook = this.hooks?.beforeLLM
    if (!hook) return messages
    const { signal } = this.abort
    let returned: unknown
    // Frozen: a hook that would slip a message into this list (a system one) fails instead; it returns its own list.
    Object.freeze(messages)
    try {
      returned = await this.bounded(hook({ agent: this.info(), step, system, messages, signal }))
    } catch (error) {
      if (signal.aborted) throw error
      throw this.fail('beforeLLM', `threw: ${describeError(error)}`)
    }
    if (returned === undefined) return messages
    return this.checkMessages(returned)
  }

  /** `afterLLM` with the response; a failure is kept in `failure`. */
  async afterLLM(step: number, response: GenerateResponse): Promise<void> {
    const hook = this.hooks?.afterLLM
    if (!hook) return
    const { signal } = this.abort
    await this.guard('afterLLM', () => hook({ agent: this.info(), step, response, signal }))
  }

  /**
   * The reason the model reads when `beforeTool` refuses the call, or undefined to run it. A hook
   * that fails refuses it too (the turn then ends `error`), and so does an abort while it waits.
   */
  async beforeTool(step: number, call: ModelToolCall): Promise<string | undefined> {
    const hook = this.hooks?.beforeTool
    if (!hook) return undefined
    const { signal } = this.abort
    let decision: unknown
    try {
      decision = await this.bounded(hook({ agent: this.info(), step, call, signal }))
    } catch (error) {
      if (signal.aborted) return 'Cancelled: the run was aborted before this tool call ran.'
      this.fail('beforeTool', `threw: ${describeError(error)}`)
      return 'Not run: the operator\'s beforeTool hook failed.'
    }
    if (decision === undefined) return undefined
    const refuse = decision !== null && typeof decision === 'object' ? (decision as { refuse?: unknown }).refuse : undefined
    if (typeof refuse === 'string' && refuse.trim()) return `Refused by the operator's policy: ${refuse.trim().slice(0, 2000)}`
    this.fail('beforeTool', 'returned something other than undefined or { refuse: reason }')
    return 'Not run: the operator\'s beforeTool hook failed.'
  }

  /** `afterTool` with the result, then the call's record; `refused`: the call did not run (a limit or `beforeTool`). */
  async afterTool(step: number, call: ModelToolCall, result: ToolResult, began: number, refused: boolean): Promise<void> {
    if (this.sink) {
      const outcome = refused ? 'refused' : !result.isError ? 'ok' : this.abort.signal.aborted ? 'aborted' : 'error'
      this.record('tool', step, call.name, began, outcome)
    }
    const hook = this.hooks?.afterTool
    if (!hook) return
    const { signal } = this.abort
    await this.guard('afterTool', () => hook({ agent: this.info(), step, call, result, signal }))
  }

  /** The record of model call `step`: with its response, or without one when it threw or was aborted. */
  modelDone(step: number, model: string | undefined, began: number, response: GenerateResponse | undefined): void {
    if (!this.sink) return
    const outcome = response ? (response.finishReason === 'error' || response.finishReason === 'other' ? 'error' : 'ok')
      : this.abort.signal.aborted ? 'aborted' : 'error'
    this.record('model', step, model ?? 'default', began, outcome, response?.usage)
  }

  private record(kind: MetricRecord['kind'], step: number, name: string, began: number, outcome: MetricRecord['outcome'], tokens?: MetricRecord['tokens']): void {
    const sink = this.sink!
    const { agent } = this
    let runId = runIds.get(this.turn)
    if (runId === undefined) runIds.set(this.turn, runId = `${agent.id}#${++minted}`)
    const record: MetricRecord = { kind, agentId: agent.id, runId, step, name, durationMs: Math.max(0, this.now() - began), outcome }
    if (agent.parent) record.parentId = agent.parent.id
    if (tokens) record.tokens = { ...tokens }
    try {
      handleRejection(sink(record), (error) => this.warn(sink, error))
    } catch (error) {
      this.warn(sink, error)
    }
  }

  /** Runs an observing hook (afterLLM, afterTool): a failure is kept, an abort while it waits ends the wait. */
  private async guard(name: HookName, call: () => unknown): Promise<void> {
    try {
      await this.bounded(call())
    } catch (error) {
      if (!this.abort.signal.aborted) this.fail(name, `threw: ${describeError(error)}`)
    }
  }

  /** A hook's promise, raced against the turn's abort; a plain value as it is. */
  private bounded(value: unknown): unknown {
    if (value !== null && typeof value === 'object' && typeof (value as { then?: unknown }).then === 'function') {
      return Promise.race([value as Promise<unknown>, this.abort.rejection])
    }
    return value
  }

  private checkMessages(returned: unknown): readonly Message[] {
    if (!Array.isArray(returned)) throw this.fail('beforeLLM', `returned ${returned === null ? 'null' : typeof returned}, not a list of messages`)
    let pinned: Message[] | undefined
    for (let i = 0; i < returned.length; i++) {
      const message = returned[i] as Message | null
      const role = message && typeof message === 'object' ? (message as { role?: unknown }).role : undefined
      if (role === 'system') {
        // The soul is pinned: a system entry never reaches the model from a hook.
        pinned ??= returned.slice(0, i)
        continue
      }
      if (!ROLES.has(role as string) || typeof message!.content !== 'string') {
        throw this.fail('beforeLLM', `returned a list whose entry ${i} is not a transcript message ({ role: 'user' | 'assistant' | 'tool', content: string })`)
      }
      pinned?.push(message!)
    }
    const messages = pinned ?? returned
    if (!messages.length) throw this.fail('beforeLLM', 'returned no messages (the model needs at least one)')
    return messages
  }

  private fail(name: HookName, what: string): AgentError {
    const error = new AgentError('HOOK_FAILED', `The operator's ${name} hook of agent ${this.agent.id} ${what}; the run ended.`)
    this.failure ??= error
    return error
  }

  private info(): AgentHookInfo {
    if (this.who) return this.who
    const { agent } = this
    const who: { -readonly [K in keyof AgentHookInfo]: AgentHookInfo[K] } = { id: agent.id, depth: agent.depth }
    if (agent.parent) who.parentId = agent.parent.id
    if (agent.label !== undefined) who.label = agent.label
    if (agent.model !== undefined) who.model = agent.model
    return this.who = Object.freeze(who)
  }
}

/**
 * The runtime's hook set and metric sink (`ctx.agents.hooks`, `ctx.agents.metrics`): one of each at
 * a time, each used by every agent that has none of its own (an agent's replaces it whole).
 */
export class HookSettings {
  hooks?: AgentHooks
  sink?: MetricSink
  /** Set once a hook or a sink was set anywhere (the runtime, an agent): until then a leg asks nothing. */
  used = false
  /** Agents' own settings (`create({ hooks, metrics })`): undefined, the runtime's; null, none. */
  private readonly agents = new WeakMap<object, { hooks?: AgentHooks | null; sink?: MetricSink | null }>()
  private readonly warned = new WeakSet<MetricSink>()

  constructor(private readonly log: (format: string, ...args: unknown[]) => void) {}

  /** Checks `value` at once (`INVALID_OPTIONS`); the effect that sets it (`DUPLICATE_HOOKS` when one is set) and unsets it. */
  setter(kind: 'hooks' | 'sink', value: AgentHooks | MetricSink): () => () => void {
    const where = kind === 'hooks' ? 'hooks()' : 'metrics()'
    const problem = value === null || value === undefined ? `${where} takes ${kind === 'hooks' ? 'an object of hooks' : 'a function'}.`
      : kind === 'hooks' ? hooksProblem(value, where) : sinkProblem(value, where)
    if (problem) throw new AgentError('INVALID_OPTIONS', problem)
    return () => {
      if (this[kind]) {
        throw new AgentError('DUPLICATE_HOOKS', `The runtime already has ${kind === 'hooks' ? 'a hook set' : 'a metric sink'} (one at a time: never merged); dispose it first, or set this one on the agents that need it.`)
      }
      ;(this as { [K in typeof kind]?: unknown })[kind] = value
      this.used = true
      return () => {
        if (this[kind] === value) this[kind] = undefined
      }
    }
  }

  /** Gives `agent` its own hooks and sink (checked by `create`); each replaces the runtime's whole, `null` for none. */
  own(agent: object, hooks: AgentHooks | null | undefined, sink: MetricSink | null | undefined): void {
    this.agents.set(agent, { hooks, sink })
    this.used = true
  }

  /** The hook run of one leg of `agent`: its own hooks and sink, else the runtime's (each on its own); undefined with neither. */
  run(agent: HookAgent, turn: object, abort: HookAbort): HookRun | undefined {
    const own = this.agents.get(agent)
    const hooks = own?.hooks === undefined ? this.hooks : own.hooks ?? undefined
    const sink = own?.sink === undefined ? this.sink : own.sink ?? undefined
    return hooks || sink ? new HookRun(agent, hooks, sink, turn, abort, this.warn) : undefined
  }

  private readonly warn: SinkWarning = (sink, error) => {
    if (this.warned.has(sink)) return
    this.warned.add(sink)
    this.log('a metric sink threw (ignored; the run goes on; said once per sink): %s', describeError(error))
  }
}
