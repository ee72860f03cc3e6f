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
    /**
     * A parked run goes on with the answer to question `questionId`, or without one when that
     * question was withdrawn (whoever asked it, below the run, ended unanswered).
     */
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

/** Direct listeners of some of the service's events, by event name (see `SubagentEvents.observe`). */
export type SubagentEventHandlers = { [K in keyof SubagentEventMap]?: (...args: SubagentEventMap[K]) => void }

type AnyHandler = (...args: unknown[]) => void

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

  /** Direct listeners by event (`observe`): called without cordis' per-call caller tracing. */
  private readonly direct = new Map<string, Set<AnyHandler>>()

  /** Whether event `name` has a listener now (so an emitter can skip building what nobody reads). */
  has(name: keyof SubagentEventMap): boolean {
    return this.direct.has(name) || hasListenersOn(this.lifecycle, name)
  }

  /**
   * Calls each handler as its event is emitted, after the cordis listeners, isolated like them.
   * For a consumer on the hot path (a tracer): a cordis listener goes through cordis' caller
   * tracing on every call (it builds a shadow context). Returns the unsubscribe.
   */
  observe(handlers: SubagentEventHandlers): () => void {
    const added: [string, AnyHandler][] = []
    for (const [name, handler] of Object.entries(handlers)) {
      if (typeof handler !== 'function') continue
      const set = this.direct.get(name) ?? new Set()
      set.add(handler as AnyHandler)
      this.direct.set(name, set)
      added.push([name, handler as AnyHandler])
    }
    return () => {
      for (const [name, handler] of added) {
        const set = this.direct.get(name)
        if (set?.delete(handler) && !set.size) this.direct.delete(name)
      }
    }
  }

  emit<K extends keyof SubagentEventMap>(name: K, ...args: SubagentEventMap[K]): void {
    const failed = (error: unknown) => this.log.warn('a listener of %s failed (ignored): %s', name, describeError(error))
    emitIsolatedOn(this.lifecycle, name, args, failed)
    const direct = this.direct.get(name)
    if (!direct) return
    // A live Set: a handler that unsubscribes (itself or another) while this runs is fine.
    for (const handler of direct) {
      try {
        handler(...args)
      } catch (error) {
        failed(error)
      }
    }
  }
}
