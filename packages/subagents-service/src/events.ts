import type { Context } from 'cordis'
import { type PendingQuestion, withoutCallerTracing } from '@cordis-subagents/shared'
import type { SubagentError } from './errors.js'
// The service's events, their arguments and handlers, and their direct listeners (`SubagentEvents.observe`). The
// emitter and the listeners that keep what a run leaves are after-run.ts.
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

/** How the run emits the service's events (`SubagentEvents`, after-run.ts): isolated, and only when someone listens. */
export interface EventSink {
  /** Whether event `name` has a listener now (so an emitter can skip building what nobody reads). */
  has(name: keyof SubagentEventMap): boolean
  emit<K extends keyof SubagentEventMap>(name: K, ...args: SubagentEventMap[K]): void
}

type AnyHandler = (...args: unknown[]) => void

/** The listeners of the service's events: cordis' (on `lifecycle`), and direct ones (`observe`), called without caller tracing. */
export class EventListeners {
  /** Read once: `ctx.lifecycle` is cordis' caller-tracing proxy, which builds a shadow context on every read. */
  protected readonly lifecycle: Context['lifecycle']
  /** Direct listeners by event name. */
  protected readonly direct = new Map<string, Set<AnyHandler>>()

  constructor(ctx: Context) { this.lifecycle = withoutCallerTracing(ctx.lifecycle) }

  /** Calls each handler as its event is emitted, after the cordis listeners, isolated like them; returns the unsubscribe. */
  observe(handlers: SubagentEventHandlers): () => void {
    const { direct } = this
    const added: [string, AnyHandler][] = []
    for (const [name, handler] of Object.entries(handlers)) {
      if (typeof handler !== 'function') continue
      const set = direct.get(name) ?? new Set()
      set.add(handler as AnyHandler)
      direct.set(name, set)
      added.push([name, handler as AnyHandler])
    }
    return () => {
      for (const [name, handler] of added) {
        const set = direct.get(name)
        if (set?.delete(handler) && !set.size) direct.delete(name)
      }
    }
  }
}
