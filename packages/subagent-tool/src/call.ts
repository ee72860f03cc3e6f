import type { Agent } from '@cordis-subagents/agent'
import type {
  SubagentHandle, SubagentOutcome, SubagentRequest, SubagentService, SubagentStart, SubagentUpdate,
} from '@cordis-subagents/subagents-service'
import { type ToolExecContext, type ToolResult } from '@cordis-subagents/tools'
import { type AbortScope, type DeadlineQueue, describeError, emptyWork, onAbort, withScopeSignal } from '@cordis-subagents/shared'
import { z } from 'zod'
import type {
  CallHooks, CancelCause, DelegateOptions, DelegationInput, InFlight, OutcomeContext, OutcomeOptions, OutputRoom, ToolLoad,
} from './call-types.js'
import { pendingResult } from './questions.js'
import { abortReason, capOutput, failed, headline, notStartedResult, readMoreOf } from './result.js'
import { waitWithinGrace } from './cancelled-dispose.js'
import { describePrompt, LABEL_DESCRIPTION } from './wording.js'

// One call of the delegation tool, from the registry's input check to its tool result: the road of a plain
// delegation through this package. A failure's, a cancel's and a cut output's texts are result.ts (entered only then).

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

/** The `execute` of a synchronous tool load: each call is one delegation (`runDelegation`). */
export function delegateSync(
  options: DelegateOptions, load: ToolLoad,
): (input: DelegationInput, exec: ToolExecContext) => ToolResult | Promise<ToolResult> {
  const hooks: CallHooks = { onParked: load.onParked }
  return (input, exec) => load.unloaded
    ? { isError: true, content: 'Subagent not started: the subagent tool was unloaded.' }
    : runDelegation(load.subagents, options, input, exec, load.inFlight, load.deadlines, hooks)
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
  const startedAt = performance.now()
  const call = new CallCancellation(options, exec, inFlight, deadlines)
  hooks.onCall?.(call)

  const request: SubagentRequest = new CallRequest(input.prompt, input.description, exec.agent as Agent, exec.toolCallId, exec)
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
    try {
      hooks.onStarted?.(run)
    } catch (error) {
      // The run is started: it is cancelled, then settled and disposed below as any run is, never left behind.
      run.cancel(`the tool could not follow its run: ${describeError(error)}`)
    }
    if (call.cause) run.dispose().catch(noop)
    return settleCall(subagents, run, run.result, call, options, exec, startedAt, !hooks.background, hooks.onParked)
  }
  call.end()
  return notStartedResult(startError, call.cause, options.timeout)
}

/**
 * The request as a class instance, not a literal: V8 may make a literal site's objects in the old generation from birth
 * (pretenuring), and a dead old request keeps its parent and the run's young objects alive through every young collection
 * until a full one (bench/README, "What survives a young collection").
 */
class CallRequest {
  declare abortScope?: AbortScope
  declare signal: AbortSignal
  constructor(readonly prompt: string, readonly label: string, readonly parent: Agent, readonly toolCallId: string, exec: ToolExecContext) {
    // The turn's abort as a scope when the runtime gives one: the service waits on it; the signal is made only if read.
    if (!exec.abortScope) this.signal = exec.signal
    else {
      this.abortScope = exec.abortScope
      withScopeSignal(this as this & { abortScope: AbortScope })
    }
  }
}

/**
 * Waits for the outcome (through host interrupts), disposes a run that ended, and formats the result (`startedAt`: the call's
 * `performance.now()`, for its `durationMs`). Waits with `then` and the call's own thenable, not in an async frame.
 */
export function settleCall(
  subagents: SubagentService, run: SubagentHandle, first: Promise<SubagentOutcome>, call: CallCancellation,
  options: OutcomeOptions, exec: ToolExecContext, startedAt: number, canSuspend: boolean, onParked?: (run: SubagentHandle) => void,
): Promise<ToolResult> {
  const finish = (outcome: SubagentOutcome | undefined, resultError?: unknown): ToolResult | PromiseLike<ToolResult> => {
    // An interrupted child waits for the host to wake or close it; so does this call (its timeout still runs).
    if (outcome?.stopReason === 'interrupted' && run.state === 'interrupted') {
      return new Promise<SubagentOutcome>((resolve) => resolve(run.current())).then(finish, (error) => finish(undefined, error))
    }
    const format = (disposeError?: unknown) => outcomeResult(subagents, run, outcome, options, {
      cause: call.cause, resultError, disposeError, durationMs: Math.round(performance.now() - startedAt), parent: exec.agent as Agent,
      canSuspend, onParked,
    })
    // A parked child is not disposed: the parked book takes it over (see outcomeResult).
    if (outcome?.stopReason !== 'pending' || run.state !== 'parked') return call.afterDispose(run, format)
    call.end()
    return format()
  }
  return first.then(finish, (error) => finish(undefined, error))
}

/**
 * What cancels one call of the tool (its parent's abort, its timeout, the tool's unload), and why. The run itself holds the
 * once-only guards (its cancel and dispose are idempotent); this only remembers the first cause, for the headline, and
 * waits for the run's dispose. A class, not closures per call: a wide fan-out keeps thousands of these alive at once.
 */
export class CallCancellation implements InFlight {
  /** Why the call was cancelled, once it was. */
  cause?: CancelCause
  /** The abort reason the cause gave the run. */
  reason?: Error
  /** The run (from `begin` on: it is also the start, cancellable before the hand-over). */
  run?: SubagentStart & Partial<SubagentHandle>
  /** The run whose dispose the call waits for (`afterDispose`) until the wait is over; then, how it went. */
  private disposing?: SubagentHandle
  private disposeError?: unknown
  /** What makes the tool result once the wait is over, and who takes it (the call's result promise, through `then`). */
  private format?: (disposeError?: unknown) => ToolResult
  private resolve?: (result: ToolResult | PromiseLike<ToolResult>) => void
  private readonly stopWaitingForParent: () => void
  private readonly cancelDeadline?: () => void

  constructor(
    private readonly options: { timeout: number },
    private readonly exec: ToolExecContext,
    private readonly inFlight: Set<InFlight>,
    deadlines: DeadlineQueue | undefined,
  ) {
    // The calls of a wide step wait on their turn's abort (its scope's waiters, or one shared listener on a signal),
    // and share one timer per load. Registered before the run's own waiter on the same abort, so a parent abort
    // reaches the run with this call's reason (which keeps a parent's limit) rather than the raw one.
    this.stopWaitingForParent = onAbort(exec.abortScope ?? exec.signal, () => this.cancel('parent'))
    if (options.timeout > 0) this.cancelDeadline = deadline(options.timeout, () => this.cancel('timeout'), deadlines)
    inFlight.add(this)
  }

  /**
   * The run's own signal is the one abort path: a cancel goes through the run, with the reason its stop reason follows (a
   * timeout is a limit, `timeout`; the rest `aborted`). Once handed over, the run is disposed at once as well: the provider
   * gets `cancel` first, and the service settles a result the provider leaves pending when its dispose returns, so a provider
   * that ignores `cancel` cannot hang the call past its timeout. Nor can a dispose that does not return, whether the cancel
   * came before the call began to wait for it or while it waited: from the cancel on, the wait is a grace at most.
   */
  cancel(why: CancelCause, parentReason: unknown = (this.exec.abortScope ?? this.exec.signal).reason): void {
    if (this.cause) return
    this.cause = why
    this.reason = abortReason(why, this.options.timeout, parentReason)
    const { run } = this
    if (!run) return
    run.cancel(this.reason)
    if (run.info) run.dispose?.().catch(noop)
    if (this.disposing) waitWithinGrace(this.disposing, this)
  }

  /**
   * The tool result once `run`'s dispose ended (or, once the call is cancelled, a grace passed: cancelled-dispose.ts), made by
   * `format`: this call as a thenable its result promise takes, so a plain delegation's wait adds no promise or timer of its own.
   */
  afterDispose(run: SubagentHandle, format: (disposeError?: unknown) => ToolResult): PromiseLike<ToolResult> {
    this.disposing = run
    this.format = format
    if (this.cause) waitWithinGrace(run, this)
    else run.dispose().then(() => this.disposed(), (error: unknown) => this.disposed(error))
    return this as unknown as PromiseLike<ToolResult>
  }

  /** The wait is over (the first of the dispose and, once cancelled, its grace): the result is made once `then` was called. */
  disposed(error?: unknown): void {
    if (!this.disposing) return
    this.disposing = undefined
    this.disposeError = error
    if (this.resolve) this.deliver()
  }

  /** PromiseLike's `then`, for the one promise `afterDispose` hands this to (which calls it once); nothing else awaits a call. */
  then(resolve: (result: ToolResult | PromiseLike<ToolResult>) => void): void {
    this.resolve = resolve
    if (!this.disposing) this.deliver()
  }

  private deliver(): void {
    const { format, resolve } = this
    this.format = this.resolve = undefined
    this.end()
    try {
      resolve!(format!(this.disposeError))
    } catch (error) {
      resolve!(Promise.reject(error))
    }
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
 * The one place progress is wrapped: a child's update goes to the caller's tool progress sink as `{ kind: 'subagent', text,
 * data: update }`. Only a caller that listens gets it (the agent gives a sink only then).
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

function deadline(ms: number, fire: () => void, queue: DeadlineQueue | undefined): () => void {
  if (queue?.ms === ms) return queue.add(fire)
  const timer = setTimeout(fire, ms)
  return () => clearTimeout(timer)
}

/**
 * The tool result of a delegation's outcome (the first one, or one after a `subagent_reply` or a
 * resume): the child's answer, a failure with its headline and diagnostic, or, for a child parked
 * on a question, that question (for the caller's model, or as the call's suspension).
 */
function outcomeResult(
  subagents: SubagentService, run: SubagentHandle, outcome: SubagentOutcome | undefined, options: OutcomeOptions, context: OutcomeContext,
): ToolResult {
  const work = outcome?.work ?? emptyWork()
  const metadata: Record<string, unknown> = {
    provider: options.provider,
    runId: run.id,
    childId: run.childId,
    stopReason: outcome?.stopReason ?? 'error',
    // The service's outcome carries its status (and an incomplete one's limit): read, not worked out again.
    status: outcome?.status ?? 'error',
    durationMs: context.durationMs,
    usage: outcome?.usage,
    work,
  }
  if (outcome?.budget) metadata.budget = outcome.budget
  if (outcome?.stepLimit !== undefined) metadata.stepLimit = outcome.stepLimit
  if (metadata.status === 'incomplete' && outcome) metadata.limit = outcome.limit
  // Filled in by assignment: `{ ...base, content }` takes V8's slow path for literals with a spread.
  const toolResult: ToolResult = { metadata, work, content: '' }
  if (outcome?.usage) toolResult.usage = outcome.usage
  const { disposeError, cause } = context
  const room = outputRoom(subagents, run.id, options.maxOutputBytes, context.parent)

  if (!outcome) {
    const diagnostic = [`the run's result failed: ${describeError(context.resultError)}`]
    if (disposeError) diagnostic.push(`cleanup also failed: ${describeError(disposeError)}`)
    return failed(toolResult, 'Subagent failed.', diagnostic.join('; '), '', room, capOutputIn)
  }
  const asks = outcome.stopReason === 'pending' && outcome.question && run.state === 'parked'
  if (!asks && outcome.stopReason !== 'completed') {
    let diagnostic = outcome.diagnostic
    if (disposeError) diagnostic = [diagnostic, `cleanup also failed: ${describeError(disposeError)}`].filter(Boolean).join('; ')
    return failed(toolResult, headline(outcome, cause, options.timeout), diagnostic, outcome.output, room, capOutputIn)
  }
  if (!asks && disposeError) {
    return failed(toolResult, 'Subagent finished but could not be cleaned up.', describeError(disposeError), outcome.output,
      room, capOutputIn, true)
  }
  if (!asks) {
    toolResult.content = outcome.output.trim() ? capOutputIn(outcome.output, room) : '(The subagent finished without a final message.)'
    if (outcome.value !== undefined) toolResult.structured = outcome.value
    return toolResult
  }
  // A child parked on a question: the question is the result (questions.ts).
  return pendingResult(subagents, run, outcome.question!, {
    parent: context.parent, questions: options.questions, canSuspend: context.canSuspend, timeout: options.timeout,
    onParked: context.onParked,
    // A message cannot suspend: a further question goes to the caller's model again.
    format: (next, durationMs) => outcomeResult(subagents, run, next, options, { ...context, durationMs, canSuspend: false }),
  }, toolResult)
}

/**
 * The room for the child's output in the caller's tool result: the load's `maxOutputBytes`, and under the caller's own result
 * cap (a tool view may cap lower than the registry), so our note is never cut off. A cut output names the verb that reads the
 * rest when the caller can call it (looked up only when an output is cut).
 */
function outputRoom(subagents: SubagentService, runId: string, maxBytes: number, parent: Agent): OutputRoom {
  const tools = parent.tools as Agent['tools'] | undefined
  const room: OutputRoom = { maxBytes, readMore: () => readMoreOf(subagents, runId, tools) }
  if (typeof tools?.resultCap === 'number') room.resultCap = tools.resultCap
  return room
}

/** Bytes kept under the caller's result cap for our truncation note (run ids and verb names are short). */
const TRUNCATION_NOTE_BYTES = 512

/**
 * Caps the output that follows `prefixBytes` of other text in a result, under the load's and the caller's caps; a cut one
 * leaves room under the caller's cap for its note.
 */
function capOutputIn(text: string, room: OutputRoom, prefixBytes = 0): string {
  const underCaller = room.resultCap === undefined ? Infinity : room.resultCap - prefixBytes
  const whole = Math.min(room.maxBytes, underCaller)
  if (text.length * 3 <= whole || Buffer.byteLength(text, 'utf8') <= whole) return text
  return capOutput(text, Math.max(0, Math.min(room.maxBytes, underCaller - TRUNCATION_NOTE_BYTES)), room.readMore())
}
