import { type BudgetBreach, CodedError } from '@cordis-subagents/shared'

export type SubagentErrorCode =
  /** `register` got a malformed provider descriptor. */
  | 'INVALID_PROVIDER'
  /** `register` got a name another registration holds. */
  | 'DUPLICATE_PROVIDER'
  /** `start` named a provider that is not registered (or was removed while the start was queued). */
  | 'NO_PROVIDER'
  /** `start` asked for persona / toolFilter / maxDepth from a provider without that capability. */
  | 'UNSUPPORTED_CAPABILITY'
  /** `start` got a malformed request. */
  | 'INVALID_REQUEST'
  /** `parent.depth + 1 > maxDepth` (the deployment's ceiling, the request's or the tree's). */
  | 'DEPTH_EXCEEDED'
  /** A tree budget refused the start: too many delegations, or the parent's steps, tokens or time are spent. */
  | 'BUDGET_EXCEEDED'
  /** The request's signal was aborted before the hand-over (or the service stopped while queued). */
  | 'ABORTED'
  /** The provider's `start` threw/rejected, or fulfilled with something that is not a run. */
  | 'PROVIDER_START_FAILED'
  /** The provider's `run.dispose()` threw/rejected (the service still released the run). */
  | 'DISPOSE_FAILED'
  /** `send` on a run whose provider cannot take follow-up messages. */
  | 'STEER_UNSUPPORTED'
  /** `send` on a run that already ended (its result settled, or it was cancelled). */
  | 'NOT_RUNNING'
  /** A parent already has the most background delegations live (`ctx.subagents.background`). */
  | 'BACKGROUND_LIMIT'
  /** A background handle this parent does not have. */
  | 'UNKNOWN_HANDLE'
  /** A host verb (`resume`, `interrupt`, `wake`, `close`) named a run id that is not live here (nor in the journal). */
  | 'NOT_FOUND'
  /** `resume` on a run that is not parked on a question (or `wake` on one that is not interrupted). */
  | 'NOT_PARKED'
  /** An answer to a question answered already (by anyone: a page, a host, the parent's model); its result went to the waiting parent. */
  | 'ALREADY_ANSWERED'
  /** A host verb the run's provider cannot do (it lacks `resume`, `interrupt`, `wake` or `close`). */
  | 'UNSUPPORTED'
  /** A parent already holds the most parked children (`MAX_PARKED_PER_PARENT`); answer or close one first. */
  | 'PARKED_LIMIT'
  /** `result(runId)` of a run that has not ended: it is running, parked on a question, or interrupted. */
  | 'NOT_ENDED'
  /** `result(runId)` of a run that ended here, but whose result is no longer kept (in memory or in the store). */
  | 'RESULT_EXPIRED'
  /** `continue` on a run that has not ended (it runs, is parked or interrupted: `send`, `resume` or `wake` it instead). */
  | 'NOT_SETTLED'
  /** `continue` on a run that already took the most continues (`MAX_CONTINUES_PER_RUN`); delegate a new task instead. */
  | 'CONTINUE_LIMIT'

/** The capability a provider must declare to accept a request option. */
export type SubagentCapability = 'persona' | 'toolFilter' | 'depthLimit'

export interface SubagentErrorOptions {
  cause?: unknown
  /** DEPTH_EXCEEDED: the depth the child would have had. */
  attempted?: number
  /** DEPTH_EXCEEDED: the request's `maxDepth`. */
  max?: number
  /** UNSUPPORTED_CAPABILITY: the missing capability. */
  capability?: SubagentCapability
  /** BUDGET_EXCEEDED: which limit, its value and the spend. */
  breach?: BudgetBreach
}

export class SubagentError extends CodedError<SubagentErrorCode> {
  override name = 'SubagentError'
  readonly attempted?: number
  readonly max?: number
  readonly capability?: SubagentCapability
  readonly breach?: BudgetBreach

  constructor(code: SubagentErrorCode, message: string, options: SubagentErrorOptions = {}) {
    super(code, message, options.cause === undefined ? undefined : { cause: options.cause })
    if (options.attempted !== undefined) this.attempted = options.attempted
    if (options.max !== undefined) this.max = options.max
    if (options.capability !== undefined) this.capability = options.capability
    if (options.breach !== undefined) this.breach = options.breach
  }
}
