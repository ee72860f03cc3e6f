import type { Agent } from '@cordis-subagents/agent'
import type { SubagentHandle, SubagentRequest, SubagentService, SubagentUpdate } from '@cordis-subagents/subagents-service'
import type { DeadlineQueue } from '@cordis-subagents/shared'

// The shapes of one call of the delegation tool (call.ts): what a tool load passes it, what it is told, how it is cancelled.

export type CancelCause = 'parent' | 'timeout' | 'unload'

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

/** How a call turns a child's outcome into its tool result. */
export interface OutcomeOptions {
  provider: string
  timeout: number
  maxOutputBytes: number
  /** What a `pending` child becomes: a question for the caller's model (`answer`, default), or the call's suspension (`escalate`). */
  questions?: 'answer' | 'escalate'
}

/** What else the call knows of how it went. */
export interface OutcomeContext {
  cause?: CancelCause
  /** Why the run's result failed (a run that broke its never-rejects promise). */
  resultError?: unknown
  disposeError?: unknown
  durationMs: number
  /** The calling agent: it holds a parked child until the child is answered. */
  parent: Agent
  /** Whether the call may suspend (false for a background call: its result is a message). */
  canSuspend: boolean
  /** Told of each child the caller now holds parked (the tool load ends them at its unload). */
  onParked?(run: SubagentHandle): void
}

/** The verb that reads a run's whole output in pages (the control entry's `subagent_result`), and the run. */
export interface ReadMore {
  verb: string
  runId: string
}

/** How much of a child's output one tool result may show, and how the model reads the rest. */
export interface OutputRoom {
  /** The tool load's `maxOutputBytes`. */
  maxBytes: number
  /** The caller's cap on a whole tool result (its tool view's `resultCap`), when known: output and notes stay under it. */
  resultCap?: number
  /** The verb and run to read the whole output with, when the caller can call it: a cut output's note names it. */
  readMore(): ReadMore | undefined
}
