// ctx.subagents: the registry, and `begin`, where every delegation's road starts: admission's own (admission/admission.ts:
// admitted once → the run, run/delegation.ts, made once from the ticket; through run/pending-start.ts when the start
// waits for a slot) → the provider → back in the run → the caller. A plain start never enters this file; a continue,
// a restore or a reattach starts here (`offRoad`). The route is drawn in this package's README ("The road of one delegation").
import { Context, Logger, Service } from 'cordis'
import { Config, resolveConfig } from './config.js'
import { SubagentError } from './errors.js'
import { BackgroundRegistry } from './background/book.js'
import type { SubagentEventHandlers } from './events.js'
import { ResultBook, SubagentEvents } from './after-run.js'
import { Admissions, type Admitted } from './admission/admission.js'
import { isObject, withoutCallerTracing } from '@cordis-subagents/shared'
import { type LiveRun, noop, now } from './run/delegation.js'
import type { RunHost, SideRoad } from './run/run-host.js'
import { NO_JOURNAL, type ParkedRunInfo, type RunJournal } from './run/journal-port.js'
import { attach, reattachKey, ReattachKeys } from './run/reattach-keys.js'
import { TraceSources } from './run/trace-sources.js'
import { type ProviderFollower, ProviderWaiters } from './provider-waiters.js'
import { HostVerbs } from './verbs/host-verbs.js'
import { ParkedBook } from './parked-book.js'
import { afterRecordedIn, noteIn } from './durable/journal.js'
import { useCheckpointJournal } from './durable/journal-checkpoints.js'
import { restoringProvider } from './durable/restore-start.js'
import { readResult } from './verbs/result-read.js'
import type { KeptResult } from './verbs/results.js'
import { ContinuableRuns, type ContinueOptions, continuingProvider } from './verbs/continuation.js'
import { checkProvider } from './admission/provider-check.js'
import { stopAdmissions } from './admission/waiters.js'
import { DelegationAccounts, runObserver } from './after-run.js'
import type { Agent, DelegationAccount } from '@cordis-subagents/agent'
import type {
  BeginOptions, SubagentHandle, SubagentOutcome, SubagentProvider, SubagentRequest, SubagentRunInfo, SubagentStart, TraceContextSource,
} from './types.js'

declare module 'cordis' {
  interface Context {
    subagents: SubagentService
  }
}

/**
 * `ctx.subagents`: the registry of subagent providers and the one entry point that delegates to
 * children through them (validation, concurrency gates, run wrapper, events).
 */
export class SubagentService extends Service<Config> {
  static Config = Config

  private readonly providers = new Map<string, SubagentProvider>()
  private readonly live = new Map<string, LiveRun>()
  private journal: RunJournal = NO_JOURNAL
  private readonly verbs = new HostVerbs(this.live, () => this.journal)
  /** Runs started with `reattach: true`, by parent and reattach key (in memory). */
  private readonly reattaching = new ReattachKeys()
  private readonly admissions: Admissions
  private stopped = false
  private readonly log: Logger
  private readonly events: SubagentEvents
  private readonly host: RunHost
  private readonly traces = new TraceSources()
  /** Callers of `ready` waiting for a provider, and followers of one. */
  private readonly waiters = new ProviderWaiters((name, error) => this.log.warn('a follower of provider "%s" threw: %s', name, error))
  /** Background delegations of every parent (see `BackgroundRegistry`). */
  readonly background = new BackgroundRegistry((parent, task, reason) => this.log.warn('background result %s of %s lost: %s', task.handle, parent.id, reason))
  /** Parked children their parents hold until answered (see `ParkedBook`). */
  readonly parked: ParkedBook
  /** The latest final outcomes by run id, bounded (see `ResultBook`); `result(runId)` reads them. */
  readonly results = new ResultBook()
  /** Ended runs that `continue` can take a new turn of (see `ContinuableRuns`). */ readonly continuable: ContinuableRuns
  /** Every delegation by its tree's root agent (`account(root)`, a root run's `result.children`). */
  private readonly accounts = new DelegationAccounts(this.live, this.background)

  constructor(ctx: Context, config?: Partial<Config>) {
    super(ctx, 'subagents', true)
    this.config = resolveConfig(config)
    this.log = ctx.logger('subagents')
    this.events = new SubagentEvents(ctx, this.log)
    // Without a journal (no durable store loaded) a run's notes go nowhere: durable/ is never entered.
    this.host = { events: this.events, log: this.log, live: this.live, traces: this.traces, note: noop, afterRecorded: now }
    this.admissions = new Admissions(this.config, this.providers, this.host, (...start) => this.offRoad(...start))
    this.begin = this.admissions.begin
    this.parked = new ParkedBook(this.log, this.live)
    this.results.keepFrom(this.events)
    this.events.observe(this.accounts.handlers())
    this.continuable = new ContinuableRuns(ctx, this.live, this.events, (name, request, options) => this.begin(name, request, options),
      () => this.journal)
    ctx.inject(['agents'], (inner) => { inner.agents.observe(runObserver(this.accounts, this.continuable.sizes)) })
    useCheckpointJournal(ctx, this, this.log)
  }

  protected override stop() {
    this.stopped = true
    this.background.stopAll()
    const error = () => new SubagentError('ABORTED', 'The subagents service stopped while this start was waiting for a slot.')
    stopAdmissions(this.admissions, error)
    this.waiters.failAll()
  }

  /**
   * Registers a provider in the caller's scope: disposing (or reloading) the calling plugin
   * removes it. Throws `INVALID_PROVIDER` or `DUPLICATE_PROVIDER`.
   */
  register(provider: SubagentProvider): () => void {
    checkProvider(provider)
    const name = provider.name
    // The caller's scope from cordis' caller-tracing shadow (`this` here), read once; the rest on
    // the service itself (each read through the shadow builds another, and a reload runs this).
    const { ctx } = this
    const self = withoutCallerTracing(this)
    const dispose = ctx.effect(() => {
      if (self.providers.has(name)) {
        throw new SubagentError('DUPLICATE_PROVIDER',
          `A subagent provider named "${name}" is already registered; configure a different name for this one.`)
      }
      self.providers.set(name, provider)
      return () => {
        if (self.providers.get(name) !== provider) return
        self.providers.delete(name)
        // Followers first: a tool bound to this provider is gone by the time the event's listeners run.
        self.waiters.removed(name)
        self.events.emit('subagent/provider-removed', name)
      }
    })
    // Followers first (a tool bound to this provider mounts), then the event, then `ready()` callers resume.
    self.waiters.added(provider)
    self.events.emit('subagent/provider-added', provider)
    self.waiters.registered(provider)
    return dispose
  }

  /**
   * Follows provider `name` from the caller's scope until it is disposed: `follower.added` runs at
   * once when the provider is registered and again each time it is registered anew, `follower.removed`
   * each time it goes, before the `subagent/provider-*` event of that change (its listeners see a bound
   * tool mounted or gone). What a tool bound to one provider uses: unlike `subagent/provider-*` listeners
   * it runs only for that provider's changes, without cordis' event dispatch. What `added` throws
   * at once is thrown here (nothing is followed); later, a follower that throws is logged and the
   * registration goes on.
   */
  follow(name: string, follower: ProviderFollower): () => void {
    if (typeof name !== 'string' || !isObject(follower) || typeof follower.added !== 'function' || typeof follower.removed !== 'function') {
      throw new SubagentError('INVALID_REQUEST', 'follow(name, { added, removed }) takes a provider name and two functions.')
    }
    const { ctx } = this
    const self = withoutCallerTracing(this)
    return ctx.effect(() => {
      // Told first: what `added` throws now fails the caller (a plugin's apply, loudly), and it follows nothing.
      const present = self.providers.get(name)
      if (present) follower.added(present)
      return self.waiters.follow(name, follower)
    })
  }

  /**
   * Resolves with provider `name` once it is registered (at once when it is). A provider may load
   * asynchronously (provider-a2a reads its agent card first), so an app that delegates, or runs a
   * turn with a tool bound to it, right at start awaits this first; by then the tool bound to it
   * is mounted. Rejects `NO_PROVIDER` after `timeout` ms (default 30 s; 0 = no timeout) and
   * `ABORTED` when `signal` aborts or the service stops.
   */
  ready(name: string, options: { timeout?: number; signal?: AbortSignal } = {}): Promise<SubagentProvider> {
    const present = this.providers.get(name)
    if (present) return Promise.resolve(present)
    return this.waiters.wait(name, options, this.stopped)
  }

  get(name: string): SubagentProvider | undefined { return this.providers.get(name) }

  /** Registered providers, in registration order. */
  list(): SubagentProvider[] { return [...this.providers.values()] }

  /** Every delegation of `root`'s tree with its state, the list capped (`MAX_ACCOUNT_LISTED`); undefined when it never delegated. */
  account(root: Agent): DelegationAccount | undefined { return this.accounts.account(root) }

  /** Runs handed over and not yet disposed. */
  runs(): SubagentRunInfo[] { return Array.from(this.live.values(), (run) => run.info) }

  /**
   * Cancels one run handed over and not yet disposed, by id, as its holder's `cancel` would (the
   * holder gets its result, stop reason `aborted`, and still disposes it): a host's verb for one
   * child of a tree, e.g. from a live view, without stopping the rest. False when no such run is live.
   */
  cancel(runId: string, reason?: string): boolean {
    const run = this.live.get(runId)
    if (!run) return false
    run.cancel(reason)
    return true
  }

  /**
   * Where runs are recorded (a durable store's journal; `NO_JOURNAL` by default), scoped to the
   * caller: disposing it puts the no-op journal back.
   */
  useJournal(journal: RunJournal): () => void {
    return this.ctx.effect(() => {
      this.journal = journal
      this.host.note = noteIn(() => this.journal, this.log)
      this.host.afterRecorded = afterRecordedIn(() => this.journal)
      return () => {
        if (this.journal !== journal) return
        this.journal = NO_JOURNAL
        this.host.note = noop
        this.host.afterRecorded = now
      }
    })
  }

  /** The live run `runId` (handed over, not disposed), or undefined. */
  run(runId: string): SubagentHandle | undefined { return this.live.get(runId) }

  /** Run `runId`'s final outcome, read again without re-running it (see result-read.ts). */
  result(runId: string): Promise<KeptResult> { return readResult(runId, this.results, this.live, this.ctx, this.continuable.inFlight) }

  /**
   * Answers the question run `runId` is parked on; fulfils with its next outcome. A run this host
   * no longer has live is looked up in the journal (restored after a restart). Rejects
   * `NOT_FOUND`, `NOT_PARKED`, `INVALID_REQUEST` (empty or too long an answer), `UNSUPPORTED`.
   */
  resume(runId: string, answer: string): Promise<SubagentOutcome> {
    return this.verbs.resume(runId, answer)
  }

  /** The runs of this host parked on a question. */
  pending(): ParkedRunInfo[] {
    return this.verbs.pending()
  }

  /**
   * Ends run `runId`'s turn in flight as `interrupted` (it stays, idle, with its transcript);
   * fulfils with that outcome. Rejects `NOT_FOUND`, `NOT_RUNNING`, `UNSUPPORTED`.
   */
  interrupt(runId: string): Promise<SubagentOutcome> {
    return this.verbs.act(runId, 'interrupt')
  }

  /** Runs a turn of interrupted run `runId` on its inbox; fulfils with its outcome. Rejects `NOT_FOUND`, `NOT_PARKED`, `UNSUPPORTED`. */
  wake(runId: string): Promise<SubagentOutcome> {
    return this.verbs.act(runId, 'wake')
  }

  /**
   * Ends run `runId` `closed` after a checkpoint (a running turn is interrupted first). Rejects
   * `NOT_FOUND`, `NOT_RUNNING`, `UNSUPPORTED`.
   */
  close(runId: string): Promise<SubagentOutcome> {
    return this.verbs.act(runId, 'close')
  }

  /** A new turn of run `runId`, which ended, on `message`; hands over as `delegate` does (see `ContinuableRuns.continue`). */
  continue(runId: string, message: string, options?: ContinueOptions): Promise<SubagentHandle> {
    return this.continuable.continue(runId, message, options)
  }

  /**
   * Delegates `request` to a child started through provider `name`. Fulfilling is the hand-over:
   * the caller then owns the run and must `dispose()` it. Rejects with a `SubagentError`; nothing
   * is left running then.
   */
  delegate(name: string, request: SubagentRequest): Promise<SubagentHandle> {
    return this.begin(name, request).handle
  }

  /**
   * `delegate`, plus a `cancel` that works from the start on: while the request waits for a slot
   * or the provider is starting the child (the handle then rejects `ABORTED`), and after the
   * hand-over (as the handle's `cancel`). For a caller with reasons of its own to stop (a timeout),
   * so it needs no abort signal of its own in front of the run's. (Admission's own `begin`: a plain
   * start goes from the caller straight to admission.)
   */
  readonly begin: (name: string, request: SubagentRequest, options?: BeginOptions) => SubagentStart

  /** `begin` of a continue, a restore or a reattach: the run is told how its start differs (`sideRoad`). */
  private offRoad(name: string, request: SubagentRequest, options: BeginOptions): SubagentStart {
    const { continues, restore } = options
    const reattach = (request as { reattach?: unknown } | undefined)?.reattach === true
    const side = this.sideRoad(request, options)
    let ticket: Admitted
    try {
      if (reattach) {
        // A task key may name a run already started: a second holder attaches to it, and nothing is admitted.
        const checked = this.admissions.check(name, request)
        const key = side.reattachKey = reattachKey(name, request)
        const earlier = this.reattaching.find(request.parent, key)
        if (earlier) return attach(earlier)
        ticket = this.admissions.admit(name, request, restore?.runId ?? continues?.runId, checked)
      } else {
        ticket = this.admissions.admit(name, request, restore?.runId ?? continues?.runId)
      }
    } catch (error) {
      return { handle: Promise.reject(error), cancel: noop }
    }
    const start = this.admissions.run(ticket, request, side)
    if (reattach) this.reattaching.record(request.parent, side.reattachKey!, start)
    return start
  }

  /**
   * Adds a source of W3C trace context for delegations whose request carries none (a tracing
   * plugin). It is called synchronously with the provider's request (run id, depth, budget) right
   * before the provider's `start`; the first valid context it returns goes to the provider (an
   * invalid one is logged and ignored). Scoped to the caller.
   */
  traceDelegations(source: TraceContextSource): () => void {
    if (typeof source !== 'function') throw new SubagentError('INVALID_REQUEST', 'traceDelegations() takes a function (request, provider) => traceContext | undefined.')
    return this.ctx.effect(() => this.traces.add(source))
  }

  /**
   * Listens to the service's events with `{ 'subagent/end': (info, outcome) => …, … }`, like
   * `ctx.on` but without cordis' caller tracing on every call (for a tracer on the hot path). Scoped to the caller.
   */
  observe(handlers: SubagentEventHandlers): () => void {
    if (!isObject(handlers)) throw new SubagentError('INVALID_REQUEST', 'observe() takes an object of handlers by event name.')
    return this.ctx.effect(() => this.events.observe(handlers))
  }

  /**
   * A start off the plain road: a continue calls the ended run's `continueWith`; a restore the
   * provider's `restore` (durable/); a reattach what the journal recorded for its key, if it has a
   * journal (the key is set once the request passed its checks). The run does not know which.
   */
  private sideRoad(request: SubagentRequest, { continues, restore }: BeginOptions): SideRoad {
    const side: SideRoad = { continues: continues !== undefined }
    if (continues) side.choose = (provider) => continuingProvider(provider, continues)
    else if (restore) side.choose = (provider) => restoringProvider(provider, restore)
    else side.choose = (provider, runId) => this.reattachedProvider(provider, request, side.reattachKey!, runId)
    return side
  }

  private reattachedProvider(
    provider: SubagentProvider, request: SubagentRequest, key: string, runId: string,
  ): SubagentProvider | Promise<SubagentProvider> {
    const journal = this.journal
    if (!journal.reattached) return provider
    // Guarded as every journal hook is: one that throws (or gives no promise) leaves the start to the provider as it is.
    try {
      const found = Promise.resolve(journal.reattached(provider, request.parent.id, key, runId))
      return found.catch(() => undefined).then((reattached) => reattached ?? provider)
    } catch {
      return provider
    }
  }
}
