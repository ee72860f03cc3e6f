import type * as Acp from '@agentclientprotocol/sdk'
import { deferred, describeError, onAbort, type PendingQuestion } from '@cordis-subagents/shared'
import type { ProviderStartRequest, SubagentResult, SubagentRun, SubagentUpdate } from '@cordis-subagents/subagents-service'
import { AcpError } from './errors.js'
import { checkDirectory } from './working-directory.js'
import { firstPrompt, type Opened, openedStatus, openSession } from './open-session.js'
import { aborted, Handshake } from './handshake.js'
import { OutputBuffer } from './output.js'
import { PermissionDesk } from './permission.js'
import { RunQuestions } from './questions/run-questions.js'
import type { AcpCheckpoint } from './resume/restore-point.js'
import type { AgentSlot, ProcessKind } from './agent-slot.js'
import { describeExit, type AgentProcess, type ExitInfo } from './process.js'
import { turnFailure } from './turn-failure.js'
import { FollowUps, notRunning } from './follow-ups.js'
import { coldSource, handBack, type ProcessSource } from './process-source.js'
import { Progress, updateSink } from './progress.js'
import { readStopReason, ResultBuilder, stderrSection } from './result.js'
import { outputContract, outputPrompt } from '@cordis-subagents/agent'
import { agentError, loadSdk, type Sdk } from './sdk.js'
import { runTenant } from './run-tenant.js'
import type { RunSettings } from './settings.js'
import { promptWithMeta } from './trace-context.js'
import { turnEvents } from './turn-events.js'
import { UsageTracker } from './usage.js'

/**
 * One child agent: one ACP session on an agent process (its own, or a pooled one), and one
 * prompt turn plus one per follow-up message (`send`). Created by `AcpRun.start`, which
 * resolves once `session/new` succeeded (the hand-over).
 */
export class AcpRun implements SubagentRun {
  readonly id: string
  childId?: string
  readonly result: Promise<SubagentResult>
  /** Process id (and process-group id) of the agent. */
  readonly pid: number | undefined
  /** Whether the process was spawned for this run, a warm spare, or reused from an earlier run. */
  readonly processKind: ProcessKind
  /** With a pool: `cold`, `warm` or `reused`, plus the pool's note (`cold (spares paused)`); the service copies it into the run's info. */
  origin?: string
  /** How the session was opened: new, an earlier one continued (session/resume or session/load), or forked from it. */
  opened: Opened = 'new'
  /** The agent can load this session again later (it advertised `loadSession`). */
  loadable = false

  private readonly proc: AgentProcess
  private readonly link: Handshake
  private session?: Acp.ActiveSession
  /** The agent answered the prompt (a stop reason): the turn ended on the protocol's terms. */
  private answered = false
  private readonly permissions: PermissionDesk
  private readonly progress: Progress
  private readonly results: ResultBuilder
  private readonly output: OutputBuffer
  private readonly followUps = new FollowUps()
  /** Escalated permission requests and a served host's questions; `result`, then one outcome per answer. */
  private readonly questions: RunQuestions
  private settled = false
  private readonly ended = deferred()
  private cancelReason?: string
  private cancelTimer?: NodeJS.Timeout
  /** When set, teardown skips the polite wait (grace already spent, or the process is gone). */
  private hurry = false
  private teardownPromise?: Promise<void>
  private disposal?: Promise<void>
  private detachSignal?: () => void
  /** Progress to the holder (`onUpdate`): none after the end, and a throwing listener is logged. */
  private readonly emit: (update: SubagentUpdate) => void

  private constructor(
    private readonly sdk: Sdk,
    private readonly settings: RunSettings,
    request: ProviderStartRequest,
    private readonly slot: AgentSlot,
    kind: ProcessKind,
    private readonly source: ProcessSource,
  ) {
    this.processKind = kind
    this.id = request.runId
    this.emit = updateSink(request.onUpdate, () => this.settled, settings)
    const { logger, redactor, providerName } = settings
    this.questions = new RunQuestions({
      pendingResult: () => this.results.result('pending'), cancel: (reason) => this.cancel(reason),
      status: (text) => this.emit({ kind: 'status', text: this.progress.text(text) }),
      redactor,
      maxParkedMs: settings.maxParkedMs,
      idleEnded: (result) => request.onIdleEnd?.(result),
    })
    this.result = this.questions.outcomes.first
    // Room for the note that says text was dropped, so text + note fit maxOutputBytes.
    const output = this.output = new OutputBuffer(settings.maxOutputBytes - Math.min(256, Math.floor(settings.maxOutputBytes / 4)))
    const usage = new UsageTracker()
    this.proc = slot.proc
    this.pid = this.proc.pid
    this.progress = new Progress({
      output, usage, redactor, emit: (update) => this.emit(update),
      ignoredUsage: (where, why) => logger.debug('%s: ignored usage from %s: %s', providerName, where, why),
      agentName: () => this.link.agentName,
    })
    this.permissions = new PermissionDesk(settings.permission, {
      closed: () => this.settled || this.cancelReason !== undefined,
      status: (text) => this.emit({ kind: 'status', text: this.progress.text(text) }),
      granted: (title, optionId) => logger.debug('%s: allowed "%s" (%s)', providerName, redactor.redact(title), optionId),
      escalate: (params, title) => this.questions.escalate(params, title),
    })
    this.results = new ResultBuilder({
      output, usage, denials: this.permissions.denials, permission: settings.permission, maxOutputBytes: settings.maxOutputBytes, redactor,
      work: () => this.progress.work(), typed: request.output && outputContract(request.output, 'request.output'),
    })
    this.link = slot.link
    const run = { sessionId: () => this.session?.sessionId, settled: () => this.settled, overflow: () => this.overflow() }
    slot.tenant = runTenant(run, this.permissions, this.questions, settings)
  }

  /**
   * Spawns the agent and opens the session. Rejects with an `AcpError` (after the process group
   * is gone) on any failure, timeout or abort before `session/new` succeeded (`settings.restore`: session/load).
   */
  static async start(settings: RunSettings, request: ProviderStartRequest, source: ProcessSource = coldSource): Promise<AcpRun> {
    const { signal } = request
    if (signal.aborted) throw aborted('before the agent was spawned')
    await checkDirectory(settings.cwd)
    const sdk = await loadSdk()
    if (signal.aborted) throw aborted('before the agent was spawned')
    for (let cold = false; ; cold = true) {
      const { slot, kind, note } = await source.acquire(sdk, settings, signal, cold, settings.resumeSessionId)
      if (signal.aborted) {
        await source.release(slot, { reusable: true, hurry: false })
        throw aborted('before the session was opened')
      }
      let run: AcpRun
      try {
        run = new AcpRun(sdk, settings, request, slot, kind, source)
      } catch (error) {
        // The process is already running: it must not outlive a run that never came to be.
        await source.release(slot, { reusable: false, hurry: true })
        throw new AcpError('ACP_SPAWN_FAILED', `Could not set up the run for "${settings.command}": ${describeError(error)}.`, { cause: error })
      }
      try {
        run.opened = await openSession(run.link, slot, settings, signal)
      } catch (error) {
        run.hurry = true
        await run.teardown()
        // A pooled process that cannot open another session is dropped; the run gets a fresh one.
        if (kind !== 'cold' && !signal.aborted && (error as AcpError).code !== 'ABORTED') {
          settings.logger.debug('%s: session/new failed on a %s process (%s); starting a fresh one', settings.providerName, kind, describeError(error))
          continue
        }
        throw error
      }
      run.session = run.link.session!
      run.childId = run.session.sessionId
      slot.opened(run.childId)
      source.opened?.(slot, run.childId)
      run.loadable = run.link.canContinue
      if (source.pooled) {
        run.origin = note ? `${kind} (${note})` : kind
        run.emit({ kind: 'status', text: note ? `${kind} process (${note})` : `${kind} process` })
      }
      if (settings.resumeSessionId) run.emit({ kind: 'status', text: openedStatus(run.opened) })
      run.beginPrompt(request, settings.restore)
      return run
    }
  }

  /** A run restored idle (it was not parked): a turn on the oldest message `send` queued; resolves with its outcome. */
  wake(): Promise<SubagentResult> {
    if (this.settled || this.cancelReason !== undefined) return this.questions.outcomes.latest
    return this.questions.wake(this.followUps.next())
  }

  /** Queues a follow-up message: the next `session/prompt` once the current turn ended (see follow-ups.ts). */
  send(message: string): void {
    if (this.settled || this.cancelReason !== undefined) throw notRunning()
    this.followUps.push(message)
  }

  /** The session to continue after a restart (`restore`), with the parked question; undefined when the agent cannot load sessions. */
  checkpoint(): AcpCheckpoint | undefined {
    return this.childId && this.loadable ? { sessionId: this.childId, cwd: this.settings.cwd, ...this.questions.saved() } : undefined
  }

  /** The question the run is parked on (its latest outcome is `pending`); undefined while it runs and once it ended. */
  get question(): PendingQuestion | undefined {
    return this.settled || this.cancelReason !== undefined ? undefined : this.questions.parked
  }

  /**
   * Answers the parked question; resolves with the next outcome (`pending` again, also for a refused answer;
   * or final). Throws `INVALID_REQUEST` while the turn runs; after the end, resolves with the final result.
   */
  resume(answer: string): Promise<SubagentResult> {
    if (this.settled || this.cancelReason !== undefined) return this.questions.outcomes.latest
    return this.questions.answer(answer)
  }

  cancel(reason?: string): void {
    if (this.settled || this.cancelReason !== undefined) return
    this.cancelReason = reason || 'cancelled by the holder'
    this.followUps.close()
    this.questions.dropAll()
    // A served host's turn that ended on a question: no turn to cancel.
    if (!this.questions.turnInFlight) return this.settle(this.results.result('aborted', `Cancelled (${this.cancelReason}) while waiting for an answer.`))
    const { settings, link } = this
    settings.logger.debug('%s: cancelling run %s (%s)', settings.providerName, this.id, this.cancelReason)
    if (this.session && link.connection) {
      link.connection.agent.notify(this.sdk.methods.agent.session.cancel, { sessionId: this.session.sessionId })
        .catch(() => {})
    }
    this.cancelTimer = setTimeout(() => {
      this.hurry = true
      this.settle(this.results.result('aborted', `Cancelled (${this.cancelReason}); the agent did not end its turn within cancelGrace `
        + `(${settings.cancelGrace} ms) after session/cancel, so its process group was terminated.`))
    }, settings.cancelGrace)
  }

  /**
   * Resolves once the result settled. The process is stopped in the background (the provider's
   * `stop()` awaits it), unless the provider already stopped: then nobody else waits for it.
   */
  dispose(): Promise<void> {
    return this.disposal ??= (async () => {
      if (!this.settled) this.cancel('the run was disposed')
      await this.ended.promise
      const { reaps } = this.settings
      if (!reaps || reaps.stopped) await this.teardown()
    })()
  }

  // The prompt turn

  /** The first prompt turn; a restored run waits (for the answer to its question, or idle for `wake`) instead. */
  private beginPrompt(request: ProviderStartRequest, restored?: AcpCheckpoint) {
    this.link.stage = 'prompt'
    const turn = (text: string) => void this.promptTurn(text).catch((error) => {
      this.settle(this.results.result('error', `Internal error of the ACP provider: ${agentError(error)}`))
    })
    // The prompt goes out first, so a cancel for an already aborted signal follows it.
    if (restored) this.questions.restored(restored, turn)
    else turn(firstPrompt(this.settings, outputPrompt(request.prompt, this.results.typed)))
    const { signal } = request
    this.detachSignal = onAbort(signal, () => this.cancel(signal.reason === undefined ? 'the request signal was aborted' : describeError(signal.reason)))
  }

  private async promptTurn(prompt: string): Promise<void> {
    const session = this.session!
    const { proc } = this
    // Each turn's PromptResponse also arrives as the `stop` message of nextUpdate(); every turn carries the trace context.
    const promptWith = (text: string) => promptWithMeta(session, [{ type: 'text', text }], this.settings.promptMeta).catch(() => {})
    void promptWith(prompt)
    const nextEvent = turnEvents(session, proc)
    try {
      for (;;) {
        const next = await nextEvent()
        if (this.settled) return
        if (next.kind === 'exit') return this.settle(this.diedResult(next.exit))
        if (next.kind === 'stop') {
          if (this.goesOn(next.response, promptWith)) continue
          return this.settle(this.stopResult(next.response))
        }
        this.progress.handle(next.update)
      }
    } catch (error) {
      if (this.settled) return
      const failed = await turnFailure(error, this.sdk, this.link, proc)
      if (this.settled) return
      if ('exit' in failed) return this.settle(this.diedResult(failed.exit))
      if (failed.hurry) this.hurry = true
      this.settle(this.results.failure(failed.headline, this.stderrSection()))
    }
  }

  /**
   * After a turn ended `end_turn`, the run goes on in the same session (true) when a host of ours
   * parked on a question (the answer will be the next prompt) or a follow-up waits (sent now);
   * else it settles with this turn.
   */
  private goesOn(response: Acp.PromptResponse, prompt: (text: string) => unknown): boolean {
    if (response.stopReason !== 'end_turn' || this.cancelReason !== undefined) return false
    const parked = this.questions.served(response, (answer) => {
      this.output.newTurn()
      prompt(answer)
    })
    const followUp = parked ? undefined : this.followUps.next()
    if (!parked && followUp === undefined) return false
    this.progress.responseUsage(response)
    if (parked) return true
    this.output.newTurn()
    this.emit({ kind: 'status', text: `follow-up message sent (turn ${this.followUps.turns})` })
    prompt(followUp!)
    return true
  }

  private stopResult(response: Acp.PromptResponse): SubagentResult {
    this.answered = true
    const { stopReason, headline } = readStopReason(response.stopReason, this.cancelReason)
    this.progress.responseUsage(response)
    return this.results.result(stopReason, headline)
  }

  private diedResult(exit: ExitInfo): SubagentResult {
    this.hurry = true
    return this.results.result('error', `The ACP agent process "${this.settings.command}" ${describeExit(exit)} during the prompt.`, this.stderrSection())
  }

  /** The stream passed maxStreamBytes, or the input backlog its bound: end the run as an error naming the limit. */
  private overflow() {
    // Before the hand-over the handshake fails with this text instead.
    if (this.settled || this.link.stage !== 'prompt') return
    this.hurry = true
    const { overflowed, overflowCode } = this.slot
    this.settle(this.results.result('error', overflowCode ? `[${overflowCode}] ${overflowed}` : overflowed!))
  }

  private settle(result: SubagentResult) {
    if (this.settled) return
    this.settled = true
    clearTimeout(this.cancelTimer)
    this.detachSignal?.()
    this.questions.finish(this.followUps.settle(result))
    this.ended.resolve()
    // Once the turn is over the process has nothing left to do for this run. The result is
    // handed back now; stopping the process (exitGrace, SIGTERM, the wait) goes on behind it.
    const reap = this.teardown()
    const { reaps } = this.settings
    if (reaps && !reaps.stopped) reaps.track(reap)
    else reap.catch(() => {}) // dispose() awaits it and reports the failure
  }

  // Teardown

  /** Hands the process back (see `handBack`); a cancelled run's process is never reused (a timeout is a cancel too). */
  private teardown(): Promise<void> {
    const reusable = this.answered && this.cancelReason === undefined && !this.hurry && this.slot.healthy
    // A session no parent continues (no resume ticket, no restore) ends with the run: a kept process closes it.
    const ends = reusable && !this.settings.keepSession && !this.settings.restore ? this.session?.sessionId : undefined
    return this.teardownPromise ??= handBack(this.source, this.slot, this.session, { reusable, hurry: this.hurry, endSession: ends })
  }

  private stderrSection(): string {
    return stderrSection(this.proc.stderrTail(), this.settings.redactor)
  }
}
