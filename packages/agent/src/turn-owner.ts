// What a turn needs of its agent and of the runtime that made it, named without the `Agent` class:
// the turn, its legs and its tool steps sit below the agent (DESIGN §3: no import circle).
import type { AbortScope, BudgetBreach } from '@cordis-subagents/shared'
import type { ToolResult, ToolView } from '@cordis-subagents/tools'
import type { InFlight } from './abort.js'
import type { Budget } from './budget.js'
import type { HookAbort, HookRun } from './hook-run.js'
import type { Inbox } from './inbox.js'
import type { Transcript } from './transcript.js'
import type { OutputContract } from './output.js'
import type { AgentEvent, AgentUsage, AgentWork, ChatModel, GateTarget, GenerateRequest, GenerateResponse, ModelToolCall, RunResult } from './types.js'

/** The members of an agent its turn reads and writes (an `Agent` has them all). */
export interface TurnAgent {
  readonly id: string
  readonly parent?: { readonly id: string }
  readonly depth: number
  readonly label?: string
  readonly model?: string
  readonly persona?: string
  readonly tools: ToolView
  readonly transcript: Transcript
  readonly inbox: Inbox
  /** The inbox once anyone used it (the turn reads it without making one). */
  readonly usedInbox?: Inbox
  readonly maxSteps: number
  readonly maxTokens?: number
  readonly maxToolCallsPerStep: number
  /** The output schema its runs' answers must match. */
  readonly output?: OutputContract
  readonly usage: AgentUsage
  readonly work: AgentWork
  budget: Budget
}

/** The observers of one run, fixed when it began (`ctx.agents.observe`). */
export interface TurnWatch {
  modelStart(step: number, model: string | undefined): void
  modelEnd(step: number, response: GenerateResponse | undefined, error?: unknown, aborted?: boolean): void
  toolStart(step: number, call: ModelToolCall): void
  toolEnd(step: number, call: ModelToolCall, result: ToolResult): void
  end(result: RunResult): void
}

/** The runtime's seam: one object per runtime, shared by every agent it builds (each call names its agent). */
export interface TurnHost {
  resolveModel(ref: string | undefined): { model: ChatModel; name: string; modelId?: string } | { error: string }
  /** The gate around model calls (`maxModelCallsInFlight`, `models.<name>.maxInFlight`); undefined when no cap is set. */
  modelGate?: { generate(target: GateTarget, request: GenerateRequest): Promise<GenerateResponse> }
  /**
   * Tells the operator's budget handlers about a breach; they may extend the budget before it is
   * re-checked. True when one of them asked to suspend the run (`BudgetEvent.suspend()`).
   */
  budgetReached(agent: TurnAgent, breach: BudgetBreach): boolean
  /** Tells the runtime's observers a run begins; undefined when nobody watches it. */
  watch(agent: TurnAgent, prompt: string, resumed?: string): TurnWatch | undefined
  /** Why an operator's `shouldContinue` hook stops the run before model call `step`; undefined to go on. */
  stopBefore(agent: TurnAgent, step: number): string | undefined
  /**
   * The hooks and metric sink of one leg of `turn` (the agent's own, else the runtime's, each on its
   * own); undefined when it has neither, so a turn without them builds nothing.
   */
  hookRun(agent: TurnAgent, turn: object, abort: HookAbort): HookRun | undefined
}

/** What a turn needs of its agent beyond the agent's members. */
export interface TurnOwner {
  readonly agent: TurnAgent
  readonly host: TurnHost
  /** Whether the agent spends from a root budget of its own (renewed per run; `onSpend` watches it). */
  readonly ownsRootBudget: boolean
  /** Work an aborted turn stopped waiting for, which `dispose` waits for (made by the first abort that leaves some). */
  inFlight?: InFlight
}

/** A turn's abort (a `TurnAbort`, turn.ts), as its legs use it; a tool call waits on it as an `AbortScope`. */
export interface LegAbort extends HookAbort, AbortScope {
  /** Whether and why the turn was aborted (read these rather than the signal's: it is made when first read). */
  readonly aborted: boolean
  readonly reason: unknown
  abort(reason?: unknown): void
  /** Lifts the listener limit of `signal` before the first tool step. */
  raiseListenerLimit(): void
  /** `work`, or a rejection once the turn is aborted (the work is then left to the owner's `inFlight`). */
  race<T>(work: T | PromiseLike<T>): Promise<T>
  /** Every race of the step has settled. */
  stepDone(): void
}

/**
 * One call of `run`, `wake` or `resume` on a turn: its abort, its listener, its observers and its
 * wall-clock timer. A turn that parks closes its leg (no timer, no listener held while parked);
 * `resume` opens the next one.
 */
export interface Leg {
  abort: LegAbort
  /** Undefined without an `onEvent`: `emit?.({ … })` then builds no event object at all. */
  emit?: (event: AgentEvent) => void
  /** The run's observers, when anyone observes (every `watch?.` is then one check, no call). */
  watch?: TurnWatch
  /** The agent's hooks and metric sink, when it has either. */
  hooks?: HookRun
  /** Nothing is reported after this, the timer is disarmed and `onSpend` unwatched. */
  close(): void
}
