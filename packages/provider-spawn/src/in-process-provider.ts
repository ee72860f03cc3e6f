import type { Context } from 'cordis'
import { addWork, describeError, expiringQuestion, type PendingQuestion, type Usage, withoutCallerTracing, type WorkCounts } from '@cordis-subagents/shared'
import {
  type Agent, type AgentCheckpoint, type AgentEvent, type AgentRuntime, askParentTool, type RunOptions, type RunResult,
} from '@cordis-subagents/agent'
import {
  type ProviderStartRequest, type RunRecord, SubagentError, type SubagentProvider, type SubagentResult, type SubagentRun,
  type SubagentUpdate,
} from '@cordis-subagents/subagents-service'
import type { ToolView } from '@cordis-subagents/tools'
import { ceilingOf, type ChildCeiling, childCheckpoint, type ChildCheckpoint, rebuiltChild } from './child-checkpoint.js'
import { restoreChild } from './restore.js'
import { aborted, combine, FollowUps, notRunning, throwNotRunning } from './follow-ups.js'
import { checkedInProcessOptions, DEFAULT_MAX_PARKED_MS, type InProcessProviderOptions, SUBAGENT_NOTE } from './config.js'
import { expiredResult, ParkTimer } from './park-timer.js'

/** The provider behind `spawn` and `fork`: a child agent in this process, made by `ctx.agents` below its parent, under its tools. */
export function createInProcessProvider(ctx: Context, given: InProcessProviderOptions): SubagentProvider {
  const options = checkedInProcessOptions(given)
  // The child's system prompt, composed once per persona (a tool load passes the same one every time).
  let lastPersona: string | undefined
  let composed = SUBAGENT_NOTE
  const childPersona = (persona: string | undefined) => {
    if (!persona) return SUBAGENT_NOTE
    if (persona !== lastPersona) composed = `${persona}\n\n${SUBAGENT_NOTE}`
    lastPersona = persona
    return composed
  }
  // Resolved at the first start, not at apply: a provider reloaded often never pays for it.
  let agents: AgentRuntime | undefined
  const runtime = () => agents ??= withoutCallerTracing(ctx.agents)
  const again: Again = (checkpoint, request) => startChild(options, request, again, rebuiltChild(runtime(), checkpoint, request))
  return {
    name: options.name,
    description: options.description,
    capabilities: { persona: true, toolFilter: true, depthLimit: true },
    inheritsParentContext: options.inheritsParentContext,
    start: (request) => startChild(options, request, again, (tools) => {
      const agents = runtime()
      const { parent } = request
      return agents.create({
        parent,
        label: request.agentOptions?.name ?? options.name,
        model: request.agentOptions?.model ?? parent.model,
        persona: childPersona(request.persona ?? agents.config.persona),
        tools,
        // Shared, not copied: the parent's completed turns, read from its transcript's storage (never its turn in flight).
        seed: options.inheritsParentContext ? parent.transcript : undefined,
        maxSteps: options.maxSteps,
        // The service's carve, charged up the tree as the child spends; one literal shape (a spread into it is V8's slow path).
        budget: request.budget,
        budgetNote: request.agentOptions?.budgetNote,
        tellParent: request.agentOptions?.tellParent,
        output: request.output,
      })
    }),
    // After a restart (restore.ts): the child comes back from its checkpoint, parked if it was, else interrupted.
    restore: (record: RunRecord, request) =>
      restoreChild(runtime(), options.name, record, request, (next, create) => startChild(options, next, again, create, true)),
  }
}

/**
 * Creates the child and hands its run over at once (creating an agent is synchronous, so no abort can land in between).
 * The run is plain: the service's run (`Delegation`) holds the once-only guards above it; here is what only this provider knows.
 */
function startChild(
  options: InProcessProviderOptions, request: ProviderStartRequest, again: Again, create: (tools: ToolView) => Agent, restored = false,
): Promise<SubagentRun> {
  // The service's scope when it gave one (reading `signal` would make an AbortSignal for nothing).
  const abort = request.abortScope ?? request.signal
  if (abort.aborted) return Promise.reject(aborted('before the provider started it; no child was created'))
  let tools = request.toolFilter ? request.parent.tools.restrict(request.toolFilter) : request.parent.tools
  if (options.askParent) tools = tools.with(askParentTool(options.askParentTool ? { name: options.askParentTool } : {}))
  let child: Agent
  try { child = create(tools) } catch (error) { return Promise.reject(error) }
  // Creating reads the parent (its cwd, its tools): an abort can land right there.
  if (abort.aborted) {
    return child.dispose().then(() => {
      throw aborted('while the provider was creating its child; the child was disposed and never ran')
    })
  }
  return Promise.resolve(new ChildRun(child, options.name, request, again, options.maxParkedMs ?? DEFAULT_MAX_PARKED_MS, restored))
}

/** One child agent's run: its first turn as `result`, and verbs (safe twice and after the end) that go on with it. Not closures. */
class ChildRun implements SubagentRun {
  readonly id: string
  readonly childId: string
  readonly result: Promise<SubagentResult>
  private readonly steering: Steering
  private runOptions: RunOptions
  /** The delegation's request, until dispose. */
  private request?: ProviderStartRequest
  private readonly toolFilter: ProviderStartRequest['toolFilter']
  private working?: Promise<SubagentResult>
  private latest?: SubagentResult
  /** Taken by `close`: the child as it was when closed (it is disposed right after). */
  private closedAt?: AgentCheckpoint
  private disposal?: Promise<void>
  /** Set once its question waited `maxParkedMs`: the run ended `timeout` (a late answer gets this). */
  private expired?: SubagentResult
  /** Made when the child first parks: most children never do. */
  private parkTimer?: ParkTimer
  /** The child agent until the run is disposed; then what its checkpoint is made of (`later`) is all a continue needs of it. */
  private agent?: Agent
  private later?: () => AgentCheckpoint
  /** The ceiling (child-checkpoint.ts) as last taken: a checkpoint after dispose, without the child, gives it again. */
  private ceiling?: ChildCeiling

  constructor(
    child: Agent, private readonly provider: string, request: ProviderStartRequest,
    private readonly again: Again, private readonly maxParkedMs: number, restored: boolean,
  ) {
    this.agent = child
    this.id = request.runId
    this.request = request
    this.toolFilter = request.toolFilter
    this.childId = child.id
    this.steering = new Steering(child)
    const update = request.onUpdate
    // Progress is built only while someone takes it (the caller's onUpdate or a subagent/update listener).
    const wanted = request.wantsUpdates ?? always
    const onEvent = update ? (event: AgentEvent) => { if (wanted()) forward(event, update) } : undefined
    this.runOptions = request.abortScope ? { abortScope: request.abortScope, onEvent } : { signal: request.signal, onEvent }
    // A restored child does not run at once: it is parked (as it was) or interrupted, and waits for the host.
    this.result = restored ? Promise.resolve(this.parkedOn(this.idle())) : this.segment(() => child.run(request.prompt, this.runOptions))
  }

  private get child(): Agent { return this.agent ?? throwNotRunning() }

  send(message: string): void { this.steering.send(message) }

  resume(answer: string): Promise<SubagentResult> {
    if (this.expired) return Promise.resolve(this.expired)
    this.parkTimer?.clear()
    return this.segment(() => this.child.resume(answer, this.runOptions))
  }

  /** Goes on past a question its grandchild asked and can no longer answer (it ended): the calls on it get that child's outcome. */
  withdraw(questionId: string): Promise<SubagentResult> {
    if (this.expired) return Promise.resolve(this.expired)
    this.parkTimer?.clear()
    return this.segment(() => this.child.withdraw(questionId, this.runOptions))
  }

  interrupt(): void { this.agent?.interrupt('interrupted by the host') }

  wake(): Promise<SubagentResult> {
    if (!this.agent) return Promise.reject(notRunning())
    if (this.child.inbox.size) return this.segment(() => this.child.wake(this.runOptions))
    return Promise.resolve({ ...this.idle(), diagnostic: 'Nothing waits in its inbox to wake on: send it a message first.' })
  }

  async close(): Promise<SubagentResult> {
    this.closedAt = this.child.checkpoint()
    if (this.request) this.ceiling = ceilingOf(this.request, this.child)
    this.parkTimer?.clear()
    this.steering.close()
    return { ...this.latest ?? { output: '' }, stopReason: 'closed', question: undefined }
  }

  /** Mid-turn: the turn in flight up to its last completed step too. Its ceiling: taken now, or (disposed) as last taken, else none. */
  checkpoint(): ChildCheckpoint {
    const checkpoint: ChildCheckpoint = this.closedAt ?? this.later?.() ?? childCheckpoint(this.child)
    if (this.request && this.agent) this.ceiling = ceilingOf(this.request, this.agent)
    checkpoint.ceiling = this.ceiling ?? { tools: [] }
    return checkpoint
  }

  /** A new run of this child on its transcript, `message` its next turn; the tool ceiling its delegation gave it stays. */
  continueWith(message: string, request: ProviderStartRequest): Promise<SubagentRun> {
    if (this.agent && (this.agent.running || this.agent.parked)) {
      return Promise.reject(new SubagentError('NOT_SETTLED', `Run ${this.id} has a turn running or parked; only an ended run can be continued.`))
    }
    const next: ProviderStartRequest = { ...request, prompt: message, toolFilter: this.toolFilter }
    return this.again(this.closedAt ?? this.later?.() ?? this.child.checkpoint(), next)
  }

  /** A limit that aborted the request (a timeout, a budget) stays the child's abort reason: it and its own delegations end so too. */
  cancel(reason?: string): void {
    this.parkTimer?.clear()
    this.steering.close()
    const abort = this.request && (this.request.abortScope ?? this.request.signal)
    this.agent?.abort(abort?.aborted ? abort.reason : new Error(reason ?? 'cancelled'))
  }

  /**
   * Aborts a turn still running and waits until it and its tools are idle, then for the result (no follow-up turn starts once
   * the child is disposed), so the result is settled once dispose is done; every call gets the same promise. A disposed run
   * may still be continued (kept up to an hour), which needs only the child's checkpoint and its tool filter: the child agent
   * and the request go, so a kept run keeps neither the child, its parent nor the ended delegation's objects alive.
   */
  dispose(): Promise<void> {
    this.parkTimer?.clear()
    return this.disposal ??= this.child.dispose().then(() => this.working).then(() => {
      this.later = this.child.checkpointLater()
      this.agent = undefined
      this.steering.release()
      this.request = undefined
      this.runOptions = {}
    })
  }

  private segment(first: () => Promise<RunResult>): Promise<SubagentResult> {
    return this.working = this.steering
      .run(first, (prompt) => this.child.run(prompt, this.runOptions))
      .then((result) => this.parkedOn(this.latest = toSubagentResult(result, this.provider)), (error): SubagentResult => ({
        stopReason: 'error',
        output: '',
        diagnostic: `The child agent could not run: ${describeError(error)}`,
      }))
  }

  /** A `pending` result starts the `maxParkedMs` bound, and its question says when it ends (`expiresAt`); passes the result on. */
  private parkedOn(result: SubagentResult): SubagentResult {
    const { question } = result
    if (result.stopReason !== 'pending' || !question || this.disposal) return result
    this.parkTimer ??= new ParkTimer(this.maxParkedMs)
    this.parkTimer.arm(() => this.expire(question))
    return { ...result, question: expiringQuestion(question, this.maxParkedMs) }
  }

  /** The question waited `maxParkedMs`: the run ends `timeout`, reported to the service at once (nothing waits on a turn). */
  private expire(question: PendingQuestion): void {
    if (this.disposal || this.child.parked?.id !== question.id) return
    this.expired = expiredResult(this.latest, question, this.maxParkedMs, this.provider)
    this.steering.close()
    this.request?.onIdleEnd?.(this.expired)
  }

  private idle(): SubagentResult {
    const question = this.child.parked
    const base = this.latest ?? { output: '' }
    return question ? { ...base, stopReason: 'pending', question } : { ...base, stopReason: 'interrupted' }
  }
}

/**
 * A run's turns (`run`, `resume`, `wake`) and its follow-up messages (`run.send`, follow-ups.ts, made at the first send). A final
 * result closes it: settling and the close happen together, so a send made it into a turn or throws `NOT_RUNNING`. A `pending` /
 * `interrupted` result leaves it open for the segment that continues the run. Usage and work of every turn add up (a resumed
 * turn's result covers its whole turn); the text is the last non-empty one (the one output rule); the stop reason the last turn's.
 */
class Steering {
  private open = true
  private ups?: FollowUps
  /** The sum of this run's turns before the one in flight (or parked), once there were any. */
  private before?: RunResult

  constructor(private child?: Agent) {}

  send(message: string): void {
    if (!this.open || !this.child) throw notRunning()
    this.ups ??= new FollowUps(this.child)
    this.ups.send(message)
  }

  /** The run was disposed: closed, and it lets go of the child. */
  release(): void { this.close(); this.child = this.ups = undefined }

  /** No more messages (a cancel, or the result is decided): later sends throw `NOT_RUNNING`; waiting follow-ups are withdrawn. */
  close(): void {
    if (!this.open) return
    this.open = false
    this.ups?.close()
  }

  /** Runs `first()`, then one more turn (`turn`) for each time a `completed` turn ended with follow-ups unread. */
  run(first: () => Promise<RunResult>, turn: (prompt: string) => Promise<RunResult>): Promise<RunResult> {
    // A promise chain, not an async function: a waiting run holds one reaction here, not a suspended frame (fan-outs wait by thousands).
    let started: Promise<RunResult>
    try {
      started = first()
    } catch (error) {
      this.close()
      return Promise.reject(error)
    }
    return this.follow(started, turn)
  }

  private follow(turnDone: Promise<RunResult>, turn: (prompt: string) => Promise<RunResult>): Promise<RunResult> {
    return turnDone.then((current) => this.after(current, this.before ? combine(this.before, current) : current, turn), (error) => {
      this.close()
      throw error
    })
  }

  /** After a turn: one more turn when a `completed` one left follow-ups unread, else the run's result. */
  private after(current: RunResult, total: RunResult, turn: (prompt: string) => Promise<RunResult>): RunResult | Promise<RunResult> {
    let idle = false
    try {
      const next = this.ups && this.open && this.child?.disposed === false && current.stopReason === 'completed' ? this.ups.next(turn) : undefined
      if (next) {
        this.before = total
        idle = true // the next turn decides
        return this.follow(next, turn)
      }
      // A parked turn goes on later (its resumed result covers it whole); an interrupted one is done.
      if (current.stopReason === 'interrupted') this.before = total
      idle = current.stopReason === 'pending' || current.stopReason === 'interrupted'
    } finally {
      if (!idle) this.close()
    }
    return this.ups?.unread ? this.ups.noted(total) : total
  }
}

/** A continue: starts a run of a child rebuilt from `checkpoint` below the request's parent, whose first turn is `request.prompt`. */
type Again = (checkpoint: AgentCheckpoint, request: ProviderStartRequest) => Promise<SubagentRun>

const always = () => true

// A class, not a literal: V8 may make a literal site's objects old from birth (bench/README, "What survives a young collection").
class ChildResult {
  declare stepLimit?: number; declare diagnostic?: string; declare budget?: SubagentResult['budget']; declare question?: PendingQuestion
  declare value?: unknown
  constructor(public stopReason: SubagentResult['stopReason'], public output: string, public usage: Usage | undefined, public work: WorkCounts) {}
}

/** A child agent's turn(s), as the provider's result. */
function toSubagentResult(run: RunResult, provider: string): SubagentResult {
  const work = addWork(run.work.own, run.work.delegated)
  // Built by assignment: V8 runs `{ ...base, stopReason }` on a slow path (≈ 0.7 µs per child).
  const result: SubagentResult = new ChildResult(run.stopReason, run.text, run.usage, work)
  if (run.stopReason === 'max-steps') {
    // The turn ends at its limit, so its own model calls are the limit.
    result.stepLimit = run.steps
    result.diagnostic = `The child hit its step limit (${run.steps} steps) without a final answer. `
      + `Give it a narrower task, or raise \`maxSteps\` of the "${provider}" provider.`
    return result
  }
  if (run.diagnostic) result.diagnostic = run.diagnostic
  if (run.budget) result.budget = run.budget
  if (run.stopReason === 'pending' && run.question) result.question = run.question
  if (run.value !== undefined) result.value = run.value
  return result
}

/** The child's agent events as the service's progress updates. */
function forward(event: AgentEvent, send: (update: SubagentUpdate) => void) {
  let update: SubagentUpdate | undefined
  switch (event.type) {
    case 'step-start': update = { kind: 'step', step: event.step }; break
    case 'text': update = { kind: 'text', text: event.text, step: event.step }; break
    case 'tool-call': update = { kind: 'tool-call', tool: event.call.name, step: event.step }; break
    case 'tool-result': update = { kind: 'tool-result', tool: event.name, isError: !!event.result.isError, step: event.step }; break
  }
  if (update) send(update)
}
