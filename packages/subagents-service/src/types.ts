import type { Agent, Budget, BudgetLimits, OutputOptions } from '@cordis-subagents/agent'
import type { ChildAgentOptions } from './child-options.js'
import type { AbortScope, BudgetBreach, BudgetName, PendingQuestion, ToolFilter, Usage, WorkCounts } from '@cordis-subagents/shared'

export interface ProviderCapabilities {
  /** The provider honours `request.persona`. */
  persona: boolean
  /** The provider honours `request.toolFilter`. */
  toolFilter: boolean
  /** The provider honours `request.maxDepth` for its own descendants. */
  depthLimit: boolean
}

/** A transport that can start a child agent. */
export interface SubagentProvider {
  name: string
  description?: string
  capabilities: ProviderCapabilities
  /** true when the child already sees the parent's completed turns (fork); false for a fresh child. */
  inheritsParentContext: boolean
  /** Starts a child. Fulfilling is the hand-over: from then on the caller owns the run. Rejecting means nothing is left running. */
  start(request: ProviderStartRequest): Promise<SubagentRun>
  /**
   * Optional: rebuilds a run from a journal's record (spawn/fork: the child agent from its
   * checkpoint), parked if it was. Used after a host restart; rejecting leaves nothing running.
   */
  restore?(record: RunRecord, request: ProviderStartRequest): Promise<SubagentRun>
}

export interface SubagentRequest {
  prompt: string
  label?: string
  parent: Agent
  signal: AbortSignal
  /** The caller's abort as a scope (a tool call's `exec.abortScope`): waited on instead of `signal`, which is read only if needed. */
  abortScope?: AbortScope
  /**
   * `model`: the child's model ref. `name`: the child agent's name (a team tool passes the member's
   * definition name); an in-process child takes it as its label, so its handle id reads `parent/name.n`.
   */
  agentOptions?: ChildAgentOptions
  persona?: string
  toolFilter?: ToolFilter
  maxDepth?: number
  /**
   * Limits of the child's tree (its own run and everything below it), carved from what the
   * parent has left. `maxConcurrent` here caps this parent's live children started with it.
   */
  budget?: BudgetLimits
  /**
   * Continue this parent's earlier child session rather than start a fresh child, where the provider can (provider-acp
   * with `resume: request`); `false` opts out under `resume: per-parent`. Providers that cannot resume ignore it.
   */
  resume?: boolean
  /**
   * W3C trace context of the delegating call (set by a tracing plugin), for a provider whose child
   * runs elsewhere to continue the trace: provider-acp passes it in `_meta` and the environment.
   */
  traceContext?: TraceContext
  /**
   * Reattach by task key: when this parent already delegated the same task (same provider, model,
   * persona and prompt) and that run is live, parked, or ended `completed` / `closed` and still
   * retained, the start gets an attached handle to that run instead of a second child.
   */
  reattach?: boolean
  /** The id of the parent's tool call that delegates (set by subagent-tool), for observers that link the two. */
  toolCallId?: string
  /** A typed result: the child's answer must match this JSON Schema, checked by the provider; the result carries it as `value`. */
  output?: OutputOptions
  onUpdate?: (update: SubagentUpdate) => void
}

/** W3C trace context headers (https://www.w3.org/TR/trace-context/): a version-00 `traceparent`, a `tracestate` of at most 512 characters. */
export interface TraceContext {
  traceparent: string
  tracestate?: string
}

/**
 * Gives a delegation its trace context when the request carries none (a tracing plugin, see
 * `ctx.subagents.traceDelegations`): called with the request the provider is about to receive.
 */
export type TraceContextSource = (request: Readonly<ProviderStartRequest>, provider: string) => TraceContext | undefined

/**
 * What a provider's `start` receives: the request plus the identity the service minted. `signal` is the service's
 * signal for this run: it aborts when the caller's signal aborts or the holder calls `cancel()` (after the hand-over the
 * service also calls the run's `cancel` once); it is made when first read, and `abortScope` is the same abort without
 * one (an in-process child waits on it). `onUpdate` is always set (the service's forwarder); it never throws.
 */
export interface ProviderStartRequest extends Omit<SubagentRequest, 'budget'> {
  /** Set by the service: the run's abort (`signal` aborts with it). */
  abortScope?: AbortScope
  /** Use it as your run's `id`. */
  runId: string
  /**
   * Whether anyone takes progress right now: the caller's `onUpdate` or a `subagent/update` listener (always set by the
   * service). A provider may skip building updates while it is false; listeners come and go, so ask per update. Usage
   * updates charge the tree's budget: send those regardless.
   */
  wantsUpdates?(): boolean
  /**
   * For a run that ends while idle (parked on a question or interrupted: nothing waits on a turn of it), e.g. its
   * `maxParkedMs` passed or its process died: report the final result here and the service ends the run at once
   * (`subagent/end`, the journal, `pending()`, every waiter). Ignored while a turn runs and after the end. Always set; never throws.
   */
  onIdleEnd?(result: SubagentResult): void
  /** The child's depth: `parent.depth + 1`. */
  depth: number
  /** The deepest depth allowed in this tree (the deployment's ceiling, lowered by the request and the tree); always set by the service. */
  maxDepthCeiling?: number
  /**
   * The child's budget, carved from the parent's (absent when the parent has none). An in-process
   * provider creates the child agent with it; any provider may read `remaining()` to pass the
   * limits on (e.g. to a subprocess). Usage a provider reports (`kind: 'usage'`) is charged to it.
   */
  budget?: Budget
}

/**
 * `timeout` and `budget` mean a limit ended the run (the tool's timeout, a tree budget), never a
 * person's cancel (`aborted`). `max-steps`: the child used every model call of its turn (its
 * agent's `maxSteps`) without a final answer; `stepLimit` says how many. `invalid_output`: the
 * answer did not match the request's `output` schema (status `error`).
 */
export type SubagentStopReason = 'completed' | 'aborted' | 'error' | 'max-tokens' | 'refusal' | 'max-steps' | 'timeout' | 'budget'
  | 'pending' | 'interrupted' | 'closed' | 'invalid_output'

/**
 * What a **provider** settles its run's `result` with. The service checks it and hands holders a
 * `SubagentOutcome` instead: the same fields, made well-formed, plus `work` and `durationMs`.
 */
export interface SubagentResult {
  stopReason: SubagentStopReason
  /** The child's last non-empty assistant text (partial when the stop reason is not `completed`). */
  output: string
  /** Why it stopped, at most 4 KiB, never secrets. */
  diagnostic?: string
  usage?: Usage
  /** The child tree's work: model calls, tool calls and delegations of the child and everything below it. */
  work?: WorkCounts
  /** With `stopReason: 'budget'`: which limit, its value and the spend. */
  budget?: BudgetBreach
  /** With `stopReason: 'max-steps'`: the child's per-turn step limit (`maxSteps`), all of it used. */
  stepLimit?: number
  /** Ignored: the service measures the duration itself (see `SubagentOutcome.durationMs`). */
  durationMs?: number
  /**
   * With `stopReason: 'pending'`: the question the child (or a run below it) waits on. The run is
   * parked, not ended: `resume(answer)` continues it. `path` starts below this run (a holder that
   * hands the question further up, such as subagent-tool, puts this run's id in front).
   */
  question?: PendingQuestion
  /** With a request `output` schema, once `completed`: the child's answer, validated (`output` is its JSON). */ value?: unknown
}

/**
 * What a **holder** receives (`run.result` of `ctx.subagents.delegate`, the `subagent/end`
 * payload): the provider's `SubagentResult` normalised (an unknown stop reason or a malformed
 * field becomes `error` with a diagnostic; the diagnostic capped to 4 KiB; a limit reported as
 * `timeout` / `budget`), frozen, with `work` and `durationMs` always set.
 */
/** How a delegation ended, in the teams design's closed vocabulary. */
export type SubagentStatus = 'done' | 'pending' | 'incomplete' | 'interrupted' | 'closed' | 'timeout' | 'error'

/** The limit an `incomplete` run hit: a tree budget by name, the per-turn step limit, or the model's output cap. */
export type IncompleteLimit = BudgetName | 'maxSteps' | 'maxTokens'

export interface SubagentStatusOf {
  status: SubagentStatus
  /** With `incomplete`: which limit stopped it. */
  limit?: IncompleteLimit
}

export interface SubagentOutcome extends SubagentResult {
  /** How it ended in the teams design's closed vocabulary (`statusOf(stopReason)`): see the README's table of both. */
  status: SubagentStatus
  /** With `status: 'incomplete'`: the limit that stopped it (a tree budget by name, `maxSteps`, `maxTokens`). */
  limit?: IncompleteLimit
  work: WorkCounts
  /** Milliseconds from the service calling the provider's `start` to the result settling (queue time excluded; monotonic clock). */
  durationMs: number
}

/** Progress of a child, as the provider reports it. */
export interface SubagentUpdate {
  kind: 'step' | 'text' | 'thought' | 'tool-call' | 'tool-result' | 'plan' | 'status' | 'usage'
  text?: string
  /**
   * With `kind: 'usage'`: the tokens the child has spent so far in this run (cumulative, not a
   * delta). The service charges the growth to the tree's budget as it arrives.
   */
  usage?: Usage
  /**
   * With `kind: 'usage'`: the work a child elsewhere has done so far (its whole tree, cumulative),
   * as its host reported it over the crossing. The service charges the growth (steps, tool calls,
   * delegations) to the tree's budget, and cancels the run with `budget` once the tree is overspent.
   */
  work?: WorkCounts
  /** Name of the tool for tool-call / tool-result updates. */
  tool?: string
  isError?: boolean
  step?: number
}

export interface SubagentRun {
  id: string
  /** The child's identity as the provider knows it (an agent id, an ACP session id). */
  childId?: string
  /**
   * How the provider got the child, when it has a word for it (provider-acp: `cold`, `warm` for a
   * spare process, `reused` for a pooled one). Copied into the run's info; at most 32 characters.
   */
  origin?: string
  /** Never rejects. */
  result: Promise<SubagentResult>
  cancel(reason?: string): void
  /** Idempotent; resolves once the child is quiescent and released. */
  dispose(): Promise<void>
  /**
   * Optional: a follow-up message for the child while the run is live (steering). An in-process
   * child reads it at its next step; an ACP child gets it as a new `session/prompt` in the same
   * session once its current turn ended. A run whose turn ends with a message waiting takes one
   * more turn before it settles, so nothing sent before the result is lost. Throws a
   * `SubagentError` `NOT_RUNNING` once the result settled (or the run was cancelled). A provider
   * without it cannot be steered (the service's handle throws `STEER_UNSUPPORTED`).
   */
  send?(message: string): void
  /**
   * Optional: continues a run whose result was `pending` with the answer to its question, and
   * settles with its next result (which may be `pending` again). Never rejects. A provider without
   * it cannot park: its children never ask.
   */
  resume?(answer: string): Promise<SubagentResult>
  /**
   * Optional: continues a `pending` run past question `questionId` of its parked turn without an
   * answer: whoever asked it (a child of this child) ended, so nobody can answer it any more; the
   * tool call that waited on it gets that child's outcome instead (spawn/fork: `agent.withdraw`).
   * Settles with the run's next result. Never rejects. Without it such a run waits for its own bound.
   */
  withdraw?(questionId: string): Promise<SubagentResult>
  /**
   * Optional: ends the child's turn in flight as `interrupted` (the result the holder waits on
   * settles so). The child stays, keeps its transcript, and can be woken (`wake`) or closed.
   */
  interrupt?(): void
  /** Optional: runs a turn of an `interrupted` child on what is in its inbox; settles with that turn's result. Never rejects. */
  wake?(): Promise<SubagentResult>
  /**
   * Optional: ends a parked or interrupted child for good after taking its checkpoint; settles
   * with `closed` (and the child's output so far). Never rejects.
   */
  close?(): Promise<SubagentResult>
  /** Optional: the child's state as JSON (spawn/fork: the agent's checkpoint), for a journal that keeps parked runs across a restart. */
  checkpoint?(): unknown
  /**
   * Optional: a new turn of this run's child after its result settled (`ctx.subagents.continue`):
   * a new run of the same child on its whole transcript (spawn/fork) or context (A2A), whose first
   * turn is `message` (`request.prompt`). The service calls it only for a run that ended, with a
   * request it admitted like a delegation's (same run id); rejecting leaves nothing running.
   */
  continueWith?(message: string, request: ProviderStartRequest): Promise<SubagentRun>
}

/** Where a handed-over run is: `running` a turn, `parked` on a question, `interrupted` (idle), or `ended`. */
export type SubagentRunState = 'running' | 'parked' | 'interrupted' | 'ended'

/**
 * What `ctx.subagents.begin` returns: `delegate`'s promise, and a cancel that works before the
 * hand-over as well as after it.
 */
export interface SubagentStart {
  /** What `delegate` returns: fulfils with the run at the hand-over, or rejects with nothing left running. */
  handle: Promise<SubagentHandle>
  /**
   * Cancels the delegation wherever it is: a start still waiting for a slot or for the provider
   * rejects `ABORTED`; a run handed over is cancelled as by its `cancel` (dispose it still). A
   * string is a person's reason (the run ends `aborted`); an Error becomes the run signal's reason,
   * so a `LimitError` (`TIMEOUT`, a budget) ends the run as that limit. Idempotent.
   */
  cancel(reason?: string | Error): void
}

/**
 * What `ctx.subagents.delegate` fulfils with: the service's wrapper around the provider's run.
 * It is a `SubagentRun` (`id` is the service-minted `runId`) plus the run's `info`.
 */
export interface SubagentHandle extends SubagentRun {
  readonly info: SubagentRunInfo
  /** Never rejects; settles after `subagent/end` was emitted. */
  result: Promise<SubagentOutcome>
  /** Steers the child (see `SubagentRun.send`); throws `STEER_UNSUPPORTED`, `NOT_RUNNING` or `INVALID_REQUEST`. */
  send(message: string): void
  /** Where the run is now. */
  readonly state: SubagentRunState
  /** The question the run is parked on (state `parked`), path as the provider gave it (from below this run). */
  readonly question?: PendingQuestion
  /**
   * Answers the question the run is parked on and settles with its next outcome (`pending` again
   * when it asks another). `result` stays the first outcome. Throws `ALREADY_ANSWERED` (its
   * question was answered, by anyone), `NOT_PARKED`, `INVALID_REQUEST` (empty or longer than
   * `MAX_ANSWER_LENGTH`), `UNSUPPORTED`.
   */
  resume(answer: string): Promise<SubagentOutcome>
  /**
   * The run's latest outcome: the final one once ended, the pending one while parked, else the
   * next one to come (an interrupted run's next outcome comes when the host wakes or closes it). Never rejects.
   */
  current(): Promise<SubagentOutcome>
  /** True for a handle a reattached delegation got: it shares the run with its owner; its `cancel` and `dispose` do nothing. */
  readonly attached?: boolean
}

export interface SubagentRunInfo {
  runId: string
  provider: string
  label?: string
  parentId: string
  childId?: string
  /** How the provider got the child (the run's `origin`), when it said. */
  origin?: string
  /** The child's depth: `parent.depth + 1`. */
  depth: number
  /** `Date.now()` when the service called the provider's `start` (after any queue wait). */
  startedAt: number
}

/** What a journal keeps of a run, and what a provider's `restore` rebuilds the child from. */
export interface RunRecord {
  runId: string
  provider: string
  parentId: string
  label?: string
  depth: number
  state: 'running' | 'parked' | 'interrupted' | 'settled' | 'closed'
  /** The provider run's `checkpoint()` (JSON). */
  checkpoint?: unknown
  question?: PendingQuestion
  reattachKey?: string
}

/** `begin`'s third argument: a run that already has an id, taken up again rather than started afresh (it keeps its id). */
export interface BeginOptions {
  /** Rebuild the stored run from its record through its provider's `restore` (after a restart; durable/journal-restore.ts). */
  restore?: RunRecord
  /** A new turn of an ended run (`continue`): its id, and its provider run, whose `continueWith` takes `message`. */
  continues?: { runId: string; run: SubagentRun; message: string }
}
