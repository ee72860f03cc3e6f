import type { Agent } from '@cordis-subagents/agent'
import type {
  SubagentHandle, SubagentOutcome, SubagentRequest, SubagentService, SubagentStart, SubagentUpdate,
} from '@cordis-subagents/subagents-service'
import { type ToolExecContext, type ToolResult } from '@cordis-subagents/tools'
import { type DeadlineQueue, LimitError, limitStop, onAbort } from '@cordis-subagents/shared'
import { z } from 'zod'
import { type CancelCause, notStartedResult, type OutcomeOptions, outcomeResult } from './result.js'
import { describePrompt, LABEL_DESCRIPTION } from './wording.js'

// One call of the delegation tool, from the registry's input check to the child's outcome (result.ts
// turns that into the tool result): the road of a plain delegation through this package.

/** The request options a tool load passes on (the service documents each), plus the tool's own. */
export interface DelegateOptions
  extends Pick<SubagentRequest, 'agentOptions' | 'persona' | 'toolFilter' | 'maxDepth' | 'budget' | 'resume' | 'reattach' | 'output'> {
  provider: string
  timeout: number
  /** The child sees its remaining budget in a note rebuilt each step (in-process providers). */
  budgetNote?: boolean
  /** The child gets a bounded `tell_parent` tool (in-process providers). */
  tellParent?: boolean
  maxOutputBytes: number
  /** What a child's question becomes (see `OutcomeOptions.questions`; default `answer`). */
  questions?: 'answer' | 'escalate'
}

export interface DelegationInput {
  description: string
  prompt: string
}

function buildInput(inheritsParentContext: boolean) {
  // Strict: a misspelt or extra field is reported to the model instead of silently dropped.
  return z.strictObject({
    description: z.string().trim().min(1, 'The description must not be empty.').max(120, 'The description must be at most 120 characters.').describe(LABEL_DESCRIPTION),
    prompt: z.string().min(1, { message: 'The prompt must not be empty.', abort: true })
      .refine((text) => text.trim().length > 0, 'The prompt must not be only whitespace.').describe(describePrompt({ inheritsParentContext })),
  })
}

const inputSchemas = new Map<boolean, ReturnType<typeof buildInput>>()

/** The model-facing input; one schema object per wording, so remounts reuse its JSON Schema. */
export function inputSchema(inheritsParentContext: boolean) {
  let schema = inputSchemas.get(inheritsParentContext)
  if (!schema) inputSchemas.set(inheritsParentContext, schema = buildInput(inheritsParentContext))
  return schema
}

/** What the calls of one tool load share. */
export interface ToolLoad {
  readonly subagents: SubagentService
  readonly inFlight: Set<InFlight>
  /** Every call of the load has the same timeout: one queue, one timer, whatever the fan-out. */
  readonly deadlines: DeadlineQueue | undefined
  /** Told of each child a call left parked (the load ends those still parked at its unload). */
  onParked(run: SubagentHandle): void
  /** Set at the unload: a call the registry looked up just before it must not start a run nobody owns. */
  unloaded: boolean
}

/** The `execute` of a synchronous tool load: each call is one delegation (`runDelegation`). */
export function delegateSync(
  options: DelegateOptions, load: ToolLoad,
): (input: DelegationInput, exec: ToolExecContext) => ToolResult | Promise<ToolResult> {
  const hooks: CallHooks = { onParked: load.onParked }
  return (input, exec) => load.unloaded
    ? { isError: true, content: 'Subagent not started: the subagent tool was unloaded.' }
    : runDelegation(load.subagents, options, input, exec, load.inFlight, load.deadlines, hooks)
}

/** A delegation in flight, as the plugin that owns it sees it. */
export interface InFlight {
  /** `reason`: the abort reason a parent cancel passes on (default: the call's signal's). */
  cancel(cause: CancelCause, reason?: unknown): void
}

/** What a background call hooks into its delegation. */
export interface CallHooks {
  /** The call exists (before the run starts): its `cancel` is how the task stops it. */
  onCall?(call: InFlight): void
  /** The service handed the run over (a background delegation keeps it, to steer it). */
  onStarted?(run: SubagentHandle): void
  /** Takes the child's progress as the service reports it, instead of the caller's `exec.onUpdate`. */
  onProgress?(update: SubagentUpdate): void
  /** A background call: its result is a message, so it cannot suspend on a child's question. */
  background?: boolean
  /** The call left its child parked (held by the caller until answered). */
  onParked?(run: SubagentHandle): void
}

/**
 * One call of the tool (one delegation): start a run, cancel it through the service on abort, timeout or unload, wait for its one result,
 * always dispose it, and turn the outcome into a tool result.
 */
export async function runDelegation(
  subagents: SubagentService,
  options: DelegateOptions,
  input: DelegationInput,
  exec: ToolExecContext,
  inFlight: Set<InFlight>,
  /** The tool load's timeouts behind one timer (its duration is `options.timeout`); without it, a timer per call. */
  deadlines?: DeadlineQueue,
  hooks: CallHooks = {},
): Promise<ToolResult> {
  const startedAt = Date.now()
  const call = new CallCancellation(options, exec, inFlight, deadlines)
  hooks.onCall?.(call)

  const request: SubagentRequest = {
    prompt: input.prompt,
    label: input.description,
    parent: exec.agent as Agent,
    signal: exec.signal,
    toolCallId: exec.toolCallId,
  }
  const progress = hooks.onProgress ?? forwardProgress(exec.onUpdate)
  if (progress) request.onUpdate = progress
  const { agentOptions } = options
  if (agentOptions?.model || agentOptions?.name) request.agentOptions = { ...agentOptions }
  if (options.budgetNote) (request.agentOptions ??= {}).budgetNote = true
  if (options.tellParent) (request.agentOptions ??= {}).tellParent = true
  if (options.persona !== undefined) request.persona = options.persona
  if (options.toolFilter) request.toolFilter = options.toolFilter
  if (options.maxDepth !== undefined) request.maxDepth = options.maxDepth
  if (options.budget) request.budget = options.budget
  if (options.resume !== undefined) request.resume = options.resume
  if (options.reattach) request.reattach = true
  if (options.output) request.output = options.output

  let run: SubagentHandle | undefined
  let startError: unknown
  try {
    // A parent signal aborted already starts no run (the service rejects `ABORTED`); the call was cancelled above.
    call.run = subagents.begin(options.provider, request)
    if (call.cause) call.run.cancel(call.reason)
    run = await call.run.handle
  } catch (error) {
    startError = error
  }
  if (run) {
    hooks.onStarted?.(run)
    if (call.cause) run.dispose().catch(noop)
    return settleCall(subagents, run, run.result, call, options, exec, startedAt, !hooks.background, hooks.onParked)
  }
  call.end()
  return notStartedResult(startError, call.cause, options.timeout)
}

/**
 * Waits for the outcome (through host interrupts), disposes a run that ended, and formats the
 * result. Waits with `then`, not in an async frame: a wide fan-out keeps thousands of calls waiting.
 */
export function settleCall(
  subagents: SubagentService, run: SubagentHandle, first: Promise<SubagentOutcome>, call: CallCancellation,
  options: OutcomeOptions, exec: ToolExecContext, startedAt: number, canSuspend: boolean, onParked?: (run: SubagentHandle) => void,
): Promise<ToolResult> {
  const finish = (outcome: SubagentOutcome | undefined, resultError?: unknown) =>
    finishCall(subagents, run, outcome, resultError, call, options, exec, startedAt, canSuspend, onParked)
  return first.then((outcome) => finish(outcome), (error) => finish(undefined, error))
}

async function finishCall(
  subagents: SubagentService, run: SubagentHandle, first: SubagentOutcome | undefined, firstError: unknown, call: CallCancellation,
  options: OutcomeOptions, exec: ToolExecContext, startedAt: number, canSuspend: boolean, onParked?: (run: SubagentHandle) => void,
): Promise<ToolResult> {
  let outcome = first
  let resultError = firstError
  let disposeError: unknown
  try {
    // An interrupted child waits for the host to wake or close it; so does this call (its timeout still runs).
    while (outcome && outcome.stopReason === 'interrupted' && run.state === 'interrupted') outcome = await run.current()
  } catch (error) {
    outcome = undefined
    resultError = error
  }
  const parked = outcome?.stopReason === 'pending' && run.state === 'parked'
  try {
    // A parked child is not disposed: the parked book takes it over (see outcomeResult).
    if (!parked) await run.dispose()
  } catch (error) {
    disposeError = error
  } finally {
    call.end()
  }
  return outcomeResult(subagents, run, outcome, options, {
    cause: call.cause, resultError, disposeError, durationMs: Date.now() - startedAt, parent: exec.agent as Agent, canSuspend, onParked,
  })
}

/**
 * What cancels one call of the tool (its parent's abort, its timeout, the tool's unload), and why.
 * The run itself holds the once-only guards (its cancel and dispose are idempotent); this only
 * remembers the first cause, for the headline. A class, not closures per call: a wide fan-out
 * keeps thousands of these alive at once.
 */
export class CallCancellation implements InFlight {
  /** Why the call was cancelled, once it was. */
  cause?: CancelCause
  /** The abort reason the cause gave the run. */
  reason?: Error
  /** The run (from `begin` on: it is also the start, cancellable before the hand-over). */
  run?: SubagentStart & Partial<SubagentHandle>
  private readonly stopWaitingForParent: () => void
  private readonly cancelDeadline?: () => void

  constructor(
    private readonly options: { timeout: number },
    private readonly exec: ToolExecContext,
    private readonly inFlight: Set<InFlight>,
    deadlines: DeadlineQueue | undefined,
  ) {
    // The calls of a wide step share one listener on their turn's signal, and one timer per load.
    // Registered before the run's own waiter on the same signal, so a parent abort reaches the run
    // with this call's reason (which keeps a parent's limit) rather than the signal's raw one.
    this.stopWaitingForParent = onAbort(exec.signal, () => this.cancel('parent'))
    if (options.timeout > 0) this.cancelDeadline = deadline(options.timeout, () => this.cancel('timeout'), deadlines)
    inFlight.add(this)
  }

  /**
   * The run's own signal is the one abort path: a cancel goes through the run, with the reason its
   * stop reason follows (a timeout is a limit, `timeout`; the rest `aborted`). Once handed over,
   * the run is disposed at once as well: the provider gets `cancel` first, and the service settles
   * a result the provider leaves pending when its dispose returns, so a provider that ignores
   * `cancel` cannot hang the call past its timeout.
   */
  cancel(why: CancelCause, parentReason: unknown = this.exec.signal.reason): void {
    if (this.cause) return
    this.cause = why
    this.reason = abortReason(why, this.options.timeout, parentReason)
    const { run } = this
    if (!run) return
    run.cancel(this.reason)
    if (run.info) run.dispose?.().catch(noop)
  }

  /** Stops listening for a cancel. */
  end(): void {
    this.cancelDeadline?.()
    this.stopWaitingForParent()
    this.inFlight.delete(this)
  }
}

const noop = () => {}

/**
 * The one place progress is wrapped: a child's update goes to the caller's tool progress sink as
 * `{ kind: 'subagent', text, data: update }`. Only a caller that listens gets it (the agent gives a sink only then).
 */
function forwardProgress(sink: ToolExecContext['onUpdate']): ((update: SubagentUpdate) => void) | undefined {
  if (!sink) return undefined
  return (update) => {
    try {
      sink({ kind: 'subagent', text: update.text, data: update })
    } catch {
      // The caller's progress sink must not break the delegation.
    }
  }
}


/**
 * Why the run is cancelled, as its abort reason: a timeout is a limit (the run ends `timeout`),
 * and a parent stopped by a limit passes that limit down (its children end `budget` / `timeout` too).
 */
function abortReason(cause: CancelCause, timeout: number, parentReason: unknown): Error {
  if (cause === 'timeout') return new LimitError('TIMEOUT', reasonText(cause, timeout))
  if (cause === 'parent' && limitStop(parentReason) && parentReason instanceof Error) return parentReason
  return new Error(reasonText(cause, timeout))
}

function reasonText(cause: CancelCause, timeout: number): string {
  switch (cause) {
    case 'parent': return 'the delegating call was aborted'
    case 'timeout': return `the subagent tool's timeout of ${timeout} ms elapsed`
    case 'unload': return 'the subagent tool was unloaded'
  }
}

function deadline(ms: number, fire: () => void, queue: DeadlineQueue | undefined): () => void {
  if (queue?.ms === ms) return queue.add(fire)
  const timer = setTimeout(fire, ms)
  return () => clearTimeout(timer)
}
