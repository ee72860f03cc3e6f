import type { Context, Logger } from 'cordis'
import { describeError, emitIsolatedOn, hasListenersOn, type PendingQuestion, withoutCallerTracing } from '@cordis-subagents/shared'
import type { SubagentError } from './errors.js'
import type { SubagentOutcome, SubagentProvider, SubagentRunInfo, SubagentUpdate } from './types.js'

declare module 'cordis' {
  interface Events {
    /** A provider was registered. */
    'subagent/provider-added'(provider: SubagentProvider): void
    /** A provider was removed (its plugin was disposed, reloaded or reconfigured). */
    'subagent/provider-removed'(name: string): void
    /** A run was handed over to its holder. */
    'subagent/start'(info: SubagentRunInfo): void
    /** A provider reported progress of a run (between `start` and `end`). */
    'subagent/update'(info: SubagentRunInfo, update: SubagentUpdate): void
    /** A run's final outcome settled (never for `pending` / `interrupted`: those park it). */
    'subagent/end'(info: SubagentRunInfo, result: SubagentOutcome): void
    /** A run parked on a question (its path from below this run); `resume` continues it. */
    'subagent/pending'(info: SubagentRunInfo, question: PendingQuestion): void
    /** A parked run goes on with the answer to question `questionId`. */
    'subagent/resume'(info: SubagentRunInfo, questionId: string): void
    /**
     * The provider was asked to start a child but the run was never handed over (its start failed,
     * or it was aborted first): `delegate` rejected with `error`. Nothing of the run is left.
     */
    'subagent/start-failed'(failure: SubagentStartFailure): void
  }
}

/** The service's events and their arguments. */
export interface SubagentEventMap {
  'subagent/provider-added': [provider: SubagentProvider]
  'subagent/provider-removed': [name: string]
  'subagent/start': [info: SubagentRunInfo]
  'subagent/update': [info: SubagentRunInfo, update: SubagentUpdate]
  'subagent/end': [info: SubagentRunInfo, result: SubagentOutcome]
  'subagent/pending': [info: SubagentRunInfo, question: PendingQuestion]
  'subagent/resume': [info: SubagentRunInfo, questionId: string]
  'subagent/start-failed': [failure: SubagentStartFailure]
}

/** A start the provider was asked for that never became a run (`subagent/start-failed`). */
export interface SubagentStartFailure {
  runId: string
  provider: string
  parentId: string
  label?: string
  error: SubagentError
}

/**
 * Emits the service's events with every listener isolated: a listener that throws or rejects is
 * logged and never reaches the service (a consumer must not veto a registration or a run's end).
 */
export class SubagentEvents {
  /**
   * The app's lifecycle itself, read once: `ctx.lifecycle` is cordis' caller-tracing proxy, which
   * builds a shadow context on every read through it. Emitting binds nothing to a caller's scope.
   */
  private readonly lifecycle: Context['lifecycle']

  constructor(ctx: Context, private readonly log: Logger) {
    this.lifecycle = withoutCallerTracing(ctx.lifecycle)
  }

  /** Whether event `name` has a listener now (so an emitter can skip building what nobody reads). */
  has(name: keyof SubagentEventMap): boolean {
    return hasListenersOn(this.lifecycle, name)
  }

  emit<K extends keyof SubagentEventMap>(name: K, ...args: SubagentEventMap[K]): void {
    emitIsolatedOn(this.lifecycle, name, args, (error) => {
      this.log.warn('a listener of %s failed (ignored): %s', name, describeError(error))
    })
  }
}
