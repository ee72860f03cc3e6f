import { type BudgetBreach, handleRejection } from '@cordis-subagents/shared'
import type { ToolResult } from '@cordis-subagents/tools'
import type { Agent } from './agent.js'
import type { BudgetHandlers, ContinueHooks } from './continue-hooks.js'
import type { Endpoint } from './endpoint.js'
import type { HookAbort, HookRun, HookSettings } from './hook-run.js'
import type { AgentObserver } from './observers.js'
import type { TurnAgent, TurnHost, TurnWatch } from './turn-owner.js'
import type { ChatModel, GateTarget, GenerateRequest, GenerateResponse, ModelToolCall, RunResult } from './types.js'

// The seam: what every agent a runtime builds calls back into at each step (its model, the gate's counted path, the
// observers' watch of a run, the operator's hooks), one object per runtime. Building agents is create.ts's.

/** The runtime's parts a turn reaches through the seam. */
interface SeamParts {
  modelGate?: CountedGate
  observers: Observers
  budgetHandlers: BudgetHandlers
  continueHooks: ContinueHooks
  hookSettings: HookSettings
}

/** The seam of a runtime, shared by every agent it builds (each call names its agent: an `Agent` of this runtime). */
export class RuntimeSeam implements TurnHost {
  readonly modelGate?: CountedGate
  private readonly parts: SeamParts

  constructor(
    private readonly models: ReadonlyMap<string, ChatModel>, private readonly config: { readonly model?: string }, parts: SeamParts,
  ) {
    this.parts = parts
    this.modelGate = parts.modelGate
  }

  resolveModel(ref: string | undefined): { model: ChatModel; name: string; modelId?: string } | { error: string } {
    return resolveModelIn(this.models, this.config.model, ref)
  }

  budgetReached(agent: TurnAgent, breach: BudgetBreach): boolean {
    const { budgetHandlers } = this.parts
    return budgetHandlers.size ? budgetHandlers.reached(agent as Agent, breach) : false
  }

  // Without observers or hooks the loop pays one size check, and enters neither file.
  watch(agent: TurnAgent, prompt: string, resumed?: string): RunWatch | undefined {
    const { observers } = this.parts
    return observers.size ? observers.watch(agent as Agent, prompt, resumed) : undefined
  }

  stopBefore(agent: TurnAgent, step: number): string | undefined {
    const { continueHooks } = this.parts
    return continueHooks.size ? continueHooks.ask(agent as Agent, step) : undefined
  }

  // Until a hook or a sink is set anywhere, a leg pays one field read here and builds nothing.
  hookRun(agent: TurnAgent, turn: object, abort: HookAbort): HookRun | undefined {
    const { hookSettings } = this.parts
    return hookSettings.used ? hookSettings.run(agent, turn, abort) : undefined
  }
}

/** The model behind a ref (`name` or `name:modelId`; none: `defaultRef`, else the only model), or an error naming the registered ones. */
export function resolveModelIn(
  models: ReadonlyMap<string, ChatModel>, defaultRef: string | undefined, ref: string | undefined,
): { model: ChatModel; name: string; modelId?: string } | { error: string } {
  ref ||= defaultRef
  // The list of names is built only for a ref that does not name a model (every model call resolves one).
  if (!ref) {
    const names = [...models.keys()]
    if (names.length === 1) return { model: models.get(names[0])!, name: names[0] }
    return { error: `No model was named and no default is configured. Registered models: ${names.join(', ') || '(none)'}.` }
  }
  const colon = ref.indexOf(':')
  const name = colon < 0 ? ref : ref.slice(0, colon)
  const model = models.get(name)
  if (!model) return { error: `Unknown model "${ref}". Registered models: ${[...models.keys()].join(', ') || '(none)'}.` }
  return colon < 0 ? { model, name } : { model, name, modelId: ref.slice(colon + 1) }
}

/** The observers of one run, fixed when it began: an observer added mid-run sees the next run. */
class RunWatch implements TurnWatch {
  constructor(private readonly agent: Agent, private readonly observers: readonly AgentObserver[]) {}

  // Each method calls every observer in its own try, and handles what an async one rejects: an observer must never break
  // the loop or stop the process (no closure per call: these run for every model and tool call of an observed run).

  modelStart(step: number, model: string | undefined): void {
    for (const observer of this.observers) {
      try { handleRejection(observer.modelCallStart?.(this.agent, step, model)) } catch { /* ignored */ }
    }
  }

  modelEnd(step: number, response: GenerateResponse | undefined, error?: unknown, aborted = false): void {
    for (const observer of this.observers) {
      try { handleRejection(observer.modelCallEnd?.(this.agent, step, response, error, aborted)) } catch { /* ignored */ }
    }
  }

  toolStart(step: number, call: ModelToolCall): void {
    for (const observer of this.observers) try { handleRejection(observer.toolCallStart?.(this.agent, step, call)) } catch { /* ignored */ }
  }

  toolEnd(step: number, call: ModelToolCall, result: ToolResult): void {
    for (const observer of this.observers) {
      try { handleRejection(observer.toolCallEnd?.(this.agent, step, call, result)) } catch { /* ignored */ }
    }
  }

  end(result: RunResult): void {
    for (const observer of this.observers) try { handleRejection(observer.runEnd?.(this.agent, result)) } catch { /* ignored */ }
  }
}

/** The observers of a runtime (`ctx.agents.observe`). With none, the seam's `watch` returns undefined after one size check. */
export class Observers {
  private readonly set = new Set<AgentObserver>()
  /** A copy taken when the set changes, so a run's start copies nothing. */
  private list: readonly AgentObserver[] = []
  /** How many observers there are: a field, so a run's check is a read. */
  size = 0

  add(observer: AgentObserver): () => void {
    this.set.add(observer)
    this.changed()
    return () => {
      this.set.delete(observer)
      this.changed()
    }
  }

  private changed(): void {
    this.list = [...this.set]
    this.size = this.list.length
  }

  /** Tells the observers that `agent` begins a run; the watch reports the rest of it to those that did not decline it. */
  watch(agent: Agent, prompt: string, resumed?: string): RunWatch | undefined {
    const observers = this.list
    // Built only once an observer declines; until then the shared list serves as is.
    let watching: AgentObserver[] | undefined
    for (let i = 0; i < observers.length; i++) {
      const observer = observers[i]
      let declined = false
      try {
        const started: unknown = resumed === undefined ? observer.runStart?.(agent, prompt) : observer.runStart?.(agent, prompt, resumed)
        declined = started === false
        handleRejection(started)
      } catch { /* ignored: an observer must never break the loop */ }
      if (declined) watching ??= observers.slice(0, i)
      else watching?.push(observer)
    }
    const list = watching ?? observers
    return list.length ? new RunWatch(agent, list) : undefined
  }
}

/**
 * The model gate's count of calls in flight per endpoint (a 429/503 there pauses every call to it), and
 * the one path most model calls take through it: with no cap configured and the shared backoff on, a
 * call to an endpoint never refused (or recovered) is only counted. Caps, an endpoint's backoff state
 * and a refusal are the gate's own (`ModelGate`, model-gate.ts: `gated`, `failed`).
 */
export abstract class CountedGate {
  /** Endpoints under backoff (refused, and not yet recovered); calls in flight per endpoint with no state here. */
  protected readonly endpoints = new Map<string, Endpoint>()
  protected readonly unlimited = new Map<string, number>()
  /** No cap is configured and the backoff is on: a call to an endpoint with no state is only counted. */
  protected countOnly = false

  /** One model call through the gate (see `ModelGate.gated`). */
  async generate(target: GateTarget, request: GenerateRequest): Promise<GenerateResponse> {
    // The turn calls only while it is not aborted (its signal is made only if read); `gated` checks it before waiting.
    if (!this.countOnly) return this.gated(target, request)
    const key = this.keyOf(target)
    if (this.endpoints.has(key)) return this.gated(target, request, key)
    // The request is the turn's own, made for this call: marked in place (a spread copy takes V8's slow path).
    request.rateLimits = 'gate'
    this.unlimited.set(key, (this.unlimited.get(key) ?? 0) + 1)
    let response: GenerateResponse
    try {
      response = await target.model.generate(request)
    } catch (error) {
      return this.failed(target, request, key, error, performance.now())
    }
    // An endpoint made meanwhile (another call was refused) took this call over, at epoch 0.
    this.endpoints.get(key)?.succeeded(0)
    this.leave(key, undefined)
    return response
  }

  protected keyOf(target: GateTarget): string {
    return target.model.rateLimitKey?.(target.modelId) ?? (target.modelId ? `${target.name}:${target.modelId}` : target.name)
  }

  protected abstract gated(target: GateTarget, request: GenerateRequest, key?: string): Promise<GenerateResponse>

  protected abstract failed(target: GateTarget, req: GenerateRequest, key: string, error: unknown, at: number): Promise<GenerateResponse>

  /**
   * A call to `key` ends its attempt: its slot of the endpoint it held goes back, or, when it went
   * through unlimited, of the endpoint made meanwhile, else its count. An endpoint with nothing
   * left to remember is dropped (the next call goes through unlimited again).
   */
  protected leave(key: string, held: Endpoint | undefined): void {
    const endpoint = held ?? this.endpoints.get(key)
    if (endpoint) {
      endpoint.free()
      if (endpoint.idle && this.endpoints.get(key) === endpoint) this.endpoints.delete(key)
      return
    }
    const left = this.unlimited.get(key)! - 1
    // An idle endpoint's count stays at 0 (a few): deleting a Map's last entry makes V8 build it a new table, which
    // outlives the next young collection, on every model call of a host that calls one at a time.
    if (left || this.unlimited.size <= MAX_IDLE_COUNTS) this.unlimited.set(key, left)
    else this.unlimited.delete(key)
  }
}

/** Most idle endpoints whose count (0) is kept; past these, an idle endpoint's count goes. */
const MAX_IDLE_COUNTS = 64
