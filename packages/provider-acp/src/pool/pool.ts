import type { Logger } from 'cordis'
import { describeError, type Redactor } from '@cordis-subagents/shared'
import { AgentSlot } from '../agent-slot.js'
import { aborted } from '../handshake.js'
import { spawnSlot, type Acquired, type ProcessSource, type ReleaseOptions } from '../process-source.js'
import type { Sdk } from '../sdk.js'
import type { RunSettings } from '../settings.js'
import { SpareBackoff, type SpareStatus } from './spare-backoff.js'
import { poolKey, type Entry, type State } from './pool-entry.js'
import { closeEnded } from './close-ended.js'
import { watchEntry } from './watch.js'

export { SPARE_RETRY_BASE_MS, type SpareStatus } from './spare-backoff.js'

/** A taken idle spare is replaced this long after the take, at the latest (sooner: its hand-back, or the next run). */
const REPLACE_AFTER_MS = 100

export interface PoolOptions {
  providerName: string
  logger: Logger
  /** Keep `spares` initialized processes ahead of need. */
  warm: boolean
  spares: number
  /** Give cleanly finished runs' processes back for the next session. */
  reuse: boolean
  maxSessionsPerProcess: number
  /** The pool never starts or keeps a process while this many of the provider's processes live. */
  maxProcesses: number
  idleTimeout: number
  /** Spare failures in a row after which no more spares are started until a run starts a process (or a reload). */
  maxSpareFailures: number
}

/**
 * The provider's agent processes when `warm` or `reuse` is on: spares started ahead of need
 * (from the settings of the latest run), processes given back by clean runs, and the runs'
 * own. A process serves one run at a time; one that misbehaved is never handed out again.
 */
export class AgentPool implements ProcessSource {
  readonly pooled = true
  private readonly entries = new Map<AgentSlot, Entry>()
  private template?: { sdk: Sdk; settings: RunSettings; key: string }
  private readonly backoff: SpareBackoff
  private stopped = false
  private readonly stopController = new AbortController()

  constructor(private readonly options: PoolOptions) {
    this.backoff = new SpareBackoff(options.maxSpareFailures, options.logger, options.providerName)
  }

  /** Processes alive (or being stopped) by state, for tests and the bench. */
  counts(): Record<State | 'stopping', number> {
    const counts = { starting: 0, idle: 0, busy: 0, stopping: 0 }
    for (const entry of this.entries.values()) counts[entry.stopping ? 'stopping' : entry.state]++
    return counts
  }

  /** Whether spares are replenished, backing off after a failure, or paused (see `SpareStatus`). */
  spareStatus(): SpareStatus {
    return this.backoff.status(this.options.warm)
  }

  /** Process counts and the spares' state, for an operator's status page. */
  status(): Record<State | 'stopping', number> & { spares: SpareStatus } {
    return { ...this.counts(), spares: this.spareStatus() }
  }

  /** Pids of processes waiting for a run (idle spares and given-back processes). */
  idlePids(): number[] {
    return this.pids('idle')
  }

  /** Pids of spares still being initialized. */
  startingPids(): number[] {
    return this.pids('starting')
  }

  private pids(state: State): number[] {
    return [...this.entries.values()].filter((entry) => entry.state === state && !entry.stopping && entry.slot.pid !== undefined)
      .map((entry) => entry.slot.pid!)
  }

  async acquire(sdk: Sdk, settings: RunSettings, signal: AbortSignal, cold = false, prefer?: string): Promise<Acquired> {
    const key = poolKey(settings)
    if (!this.stopped) this.template = { sdk, settings, key }
    if (!cold && !this.stopped) {
      const usable = [...this.entries.values()].filter((entry) => entry.state === 'idle' && !entry.stopping && entry.key === key && entry.slot.healthy)
      // The process that still has the session to resume open continues it without a reload.
      if (prefer) usable.sort((a, b) => Number(b.slot.openSessions.has(prefer)) - Number(a.slot.openSessions.has(prefer)))
      for (const entry of usable) {
        clearTimeout(entry.idleTimer)
        entry.state = 'busy'
        entry.slot.park(false)
        this.startSucceeded()
        this.scheduleRefill(REPLACE_AFTER_MS)
        return { slot: entry.slot, kind: entry.slot.sessions ? 'reused' : 'warm' }
      }
      // A replacement not started yet starts now, so this run can wait for it (a burst stays warm).
      if (this.refillTimer) this.replaceTaken()
      // A spare still initializing is further along than a new spawn: wait for it.
      for (const entry of this.entries.values()) {
        if (entry.state !== 'starting' || entry.claimed || entry.stopping || entry.key !== key || !entry.slot.healthy) continue
        if (await this.claim(entry, signal)) {
          this.startSucceeded()
          return { slot: entry.slot, kind: 'warm' }
        }
        break
      }
      if (signal.aborted) throw aborted('while waiting for a spare agent process')
      // At the cap, an idle process of another cwd or environment makes room for this run.
      if (this.alive() >= this.options.maxProcesses) this.evictOther(key)
    }
    const note = this.options.warm && this.backoff.paused ? 'spares paused' : undefined
    // A cold process counts against maxProcesses from the spawn on, so a spare started meanwhile does not pass it.
    this.spawning++
    let slot: AgentSlot
    try {
      slot = await spawnSlot(sdk, settings, signal)
    } finally {
      this.spawning--
    }
    if (this.stopped) {
      // The provider went away meanwhile: this run still gets its process, which is not kept.
      this.entries.set(slot, { slot, key, state: 'busy' })
      return { slot, kind: 'cold' }
    }
    this.startSucceeded()
    this.entries.set(slot, { slot, key, state: 'busy' })
    this.watch(slot, settings.redactor)
    this.replaceTaken()
    return note ? { slot, kind: 'cold', note } : { slot, kind: 'cold' }
  }

  async release(slot: AgentSlot, { reusable, hurry, endSession }: ReleaseOptions): Promise<void> {
    const entry = this.entries.get(slot)
    if (!entry) return slot.terminate(hurry ? 0 : slot.exitGrace)
    slot.tenant = undefined
    const keep = this.options.reuse && reusable && !hurry && !this.stopped && slot.healthy
      && slot.sessions < this.options.maxSessionsPerProcess && this.alive() <= this.options.maxProcesses
    if (keep && endSession) closeEnded(slot, endSession)
    if (keep) {
      this.idle(entry)
      this.scheduleRefill(0)
      return
    }
    await this.retire(entry, hurry ? 0 : slot.exitGrace)
    this.scheduleRefill(0)
  }

  opened(slot: AgentSlot, sessionId: string) {
    for (const entry of this.entries.values()) {
      if (entry.slot === slot || !entry.slot.openSessions.delete(sessionId)) continue
      // Its copy of the session is behind the one continued elsewhere: never hand it out again.
      entry.slot.stale = true
      if (entry.state === 'idle') void this.retire(entry, 0)
    }
  }

  /** Stops every process not serving a run; those that are stop when their run gives them back. */
  async stop(): Promise<void> {
    this.stopped = true
    this.template = undefined
    clearTimeout(this.refillTimer)
    this.stopController.abort()
    await Promise.all([...this.entries.values()].filter((entry) => entry.state !== 'busy').map((entry) => this.retire(entry, 0)))
  }

  /** Processes alive or being spawned for a run (those being stopped included: they are not gone yet). */
  private alive(): number {
    return this.entries.size + this.spawning
  }

  private spawning = 0

  /**
   * Healthy idle or starting processes for `key` that no run waits for yet (what the next run with
   * that key can take without a spawn).
   */
  private readyFor(key: string): number {
    let ready = 0
    for (const entry of this.entries.values()) {
      if (entry.state !== 'busy' && !entry.claimed && !entry.stopping && entry.key === key && entry.slot.healthy) ready++
    }
    return ready
  }

  /**
   * A run just claimed a starting spare (or found a replacement due): the replacement starts now, in
   * the run's stack, so a run that follows at once finds it starting (issue 27). A run that took an
   * idle spare instead schedules its replacement `REPLACE_AFTER_MS` later (or at its hand-back, if
   * sooner): a spawn blocks the loop for a few milliseconds, which a short run would wait for.
   */
  private replaceTaken() {
    if (this.stopped || !this.options.warm) return
    clearTimeout(this.refillTimer)
    this.refillTimer = undefined
    this.refillAt = Infinity
    this.refill()
  }

  private idle(entry: Entry) {
    entry.state = 'idle'
    entry.slot.park(true)
    clearTimeout(entry.idleTimer)
    entry.idleTimer = setTimeout(() => {
      this.options.logger.debug('%s: pooled agent process %s idle for %d ms; stopping it', this.options.providerName, entry.slot.pid, this.options.idleTimeout)
      // Not replaced: the next run starts spares again.
      void this.retire(entry, 0, false)
    }, this.options.idleTimeout)
    // Idle processes never keep the host alive; the exit safety net reaps them.
    entry.idleTimer.unref()
  }

  private refillTimer?: NodeJS.Timeout
  private refillAt = Infinity

  /** Runs `refill` in `ms` (or sooner, if already scheduled sooner); never in the caller's stack. */
  private scheduleRefill(ms: number) {
    if (this.stopped || !this.options.warm) return
    const at = performance.now() + ms
    if (this.refillTimer && this.refillAt <= at) return
    clearTimeout(this.refillTimer)
    this.refillAt = at
    this.refillTimer = setTimeout(() => {
      this.refillTimer = undefined
      this.refillAt = Infinity
      this.refill()
    }, ms)
    this.refillTimer.unref()
  }

  /** Starts spares for the latest run's settings until `spares` are ready or the process cap is reached. */
  private refill() {
    const { template, options } = this
    if (!options.warm || !template || this.stopped || this.backoff.paused) return
    const wait = this.backoff.wait()
    if (wait > 0) return this.scheduleRefill(wait)
    // Processes of an older key are not what the next run needs: idle ones make room.
    while (this.readyFor(template.key) < options.spares) {
      if (this.alive() >= options.maxProcesses && !this.evictOther(template.key)) return
      this.startSpare(template.sdk, template.settings, template.key)
    }
  }

  /** Waits for a starting spare for a run; true when the run got it, false when it failed or the run was aborted. */
  private async claim(entry: Entry, signal: AbortSignal): Promise<boolean> {
    entry.claimed = true
    this.replaceTaken()
    let onAbort!: () => void
    const abort = new Promise<false>((resolve) => {
      onAbort = () => resolve(false)
      signal.addEventListener('abort', onAbort, { once: true })
    })
    const ok = await Promise.race([entry.ready!, abort])
    signal.removeEventListener('abort', onAbort)
    if (ok && !entry.stopping && !signal.aborted && entry.slot.healthy) {
      entry.state = 'busy'
      entry.slot.park(false)
      return true
    }
    entry.claimed = false
    // Not taken after all: a spare that is up waits for the next run.
    if (entry.up && !entry.stopping && entry.state === 'starting') {
      if (this.stopped) void this.retire(entry, 0)
      else this.idle(entry)
    }
    return false
  }

  /**
   * Starts stopping one idle process of another key to make room (the spare follows once it is
   * gone, from `retire`); always false, since there is no room yet.
   */
  private evictOther(key: string): boolean {
    for (const entry of this.entries.values()) {
      if (entry.state === 'idle' && !entry.stopping && entry.key !== key) {
        void this.retire(entry, 0)
        return false
      }
    }
    return false
  }

  private startSpare(sdk: Sdk, settings: RunSettings, key: string) {
    let slot: AgentSlot
    try {
      slot = new AgentSlot(sdk, settings)
    } catch (error) {
      return this.spareFailed(`it could not be spawned: ${describeError(error)}`)
    }
    const entry: Entry = { slot, key, state: 'starting' }
    // A spare is the pool's business, not the host's: it never keeps the event loop alive.
    slot.park(true)
    this.entries.set(slot, entry)
    this.watch(slot, settings.redactor)
    // Initializing is not yet success: an agent that answers `initialize` and then dies would be
    // replaced forever. A spare counts as good once a run takes it (see `startSucceeded`).
    // initialize, then session/new ahead with the latest run's settings (see `Handshake.openAhead`).
    const { signal } = this.stopController
    entry.ready = slot.link.connect(signal).then(() => slot.link.openAhead(signal, settings)).then(() => {
      entry.up = true
      if (entry.stopping) return false
      if (entry.claimed) return true
      if (this.stopped) void this.retire(entry, 0)
      else this.idle(entry)
      return false
    }, (error) => {
      if (entry.stopping || this.stopped) {
        void this.retire(entry, 0)
        return false
      }
      void this.retire(entry, 0, false)
      this.spareFailed(describeError(error))
      return false
    })
  }

  /** A run got a process that works: spares are replenished normally again. */
  private startSucceeded() {
    this.backoff.succeeded(this.options.warm)
  }

  /** A spare failed to start, or died by itself while waiting: back off, or pause (see `SpareBackoff`). */
  private spareFailed(reason: string) {
    this.backoff.failed(reason)
    this.scheduleRefill(0)
  }

  /** A process that dies or overflows while no run holds it is stopped and counts as a failed spare (see watch.ts). */
  private watch(slot: AgentSlot, redactor: Redactor) {
    watchEntry(slot, redactor, {
      entry: (watched) => this.entries.get(watched),
      retire: (entry) => void this.retire(entry, 0, false),
      spareFailed: (reason) => this.spareFailed(reason),
    })
  }

  /** Stops the process; `refill` then starts what `spares` asks for in its place. */
  private retire(entry: Entry, grace: number, refill = true): Promise<void> {
    clearTimeout(entry.idleTimer)
    return entry.stopping ??= entry.slot.terminate(grace).finally(() => {
      this.entries.delete(entry.slot)
      if (refill && !this.stopped) this.scheduleRefill(0)
    })
  }
}
