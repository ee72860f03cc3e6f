import type { StreamResponse } from '@a2a-js/sdk'
import { answerProblem, expiringQuestion, type PendingQuestion } from '@cordis-subagents/shared'
import type { ProviderStartRequest, RunRecord, SubagentResult, SubagentUpdate } from '@cordis-subagents/subagents-service'
import { LimitError } from './bounded-fetch.js'
import { crossingMetadata, toldRelay, traceHeaders } from './crossing.js'
import { A2aError } from './errors.js'
import { Opening, sendFailure } from './opening.js'
import { boundedFirstEvent, type Follower, followStream, pollTask, wakeableSleep } from './follow.js'
import { describeRequestError } from './request-error.js'
import { phaseResult } from './run-result.js'
import { outputContract, outputPrompt } from '@cordis-subagents/agent'
import { isActive, isFinal, isInterrupted } from './task-state.js'
import { storedTaskId } from './remote-ids.js'
import { TaskView } from './task-view.js'
import type { LiveRun, RunSettings } from './run-settings.js'
import { type A2aWire, isTask, isTaskNotFound, type Outgoing, type WireOptions } from './wire.js'

export type { LiveRun, RunSettings } from './run-settings.js'

/** The state of one delegation to a remote A2A agent: its task, its requests, its question (see `startA2aRun`). */
export class A2aRun implements LiveRun, Follower {
  readonly view: TaskView
  readonly wire: A2aWire
  readonly limits: RunSettings
  /** Aborts every request of the current phase (dispose, a cancel that got no answer in time); renewed per phase. */
  private transport = new AbortController()
  private readonly trace: Record<string, string>
  private stream?: AsyncIterator<StreamResponse>
  private cancelReason?: string
  private cancelling?: Promise<void>
  private graceTimer?: NodeJS.Timeout
  private graceExpired = false
  private following?: Promise<SubagentResult>
  private wake?: () => void
  private failure?: string
  /** Updates go to the parent while a phase is followed (never after its result). */
  private accepting = true
  /** The question the run is parked on, until `resume` or the parked timeout. */
  private parked?: PendingQuestion
  private parkTimer?: NodeJS.Timeout
  private expired = false
  /** A restored run's recorded question: its id is kept when the task still asks it. */
  private recorded?: PendingQuestion
  private opened = false
  private opening?: Promise<void>
  private openingWindow?: Opening
  /** A final result (not `pending`) settled: a later cancel does nothing. */
  private ended = false
  /** The provider stopped while the run was starting (`stop`): once its task is named it is disposed and the start rejects. */
  stopped = false
  private disposal?: Promise<void>

  constructor(
    private readonly settings: RunSettings,
    private readonly request: ProviderStartRequest,
    private readonly update: (update: SubagentUpdate) => void,
    /** A continue of an ended run: its prompt goes to the earlier task's context (a new task there). */
    private readonly continuing?: { contextId: string },
  ) {
    this.view = new TaskView(settings.maxOutputBytes, request.output && outputContract(request.output, 'request.output'), toldRelay(request))
    this.wire = settings.wire
    this.limits = settings
    this.trace = traceHeaders(request)
  }

  options(): WireOptions { return { signal: this.transport.signal, serviceParameters: this.trace } }

  abort(reason?: unknown): void { this.transport.abort(reason) }

  fail(why: string): void { this.failure ??= why }

  /**
   * Sends the prompt; resolves once the remote answered (the task exists), rejects `A2A_SEND_FAILED`
   * when it did not. A stream must bring its first event within `requestTimeout` (keep-alive
   * comments do not count). An abort (or `stop`) before the remote names the task keeps the request
   * open up to `cancelGrace` more (`Opening`): the caller then cancels a task that was named.
   */
  open(): Promise<void> {
    return this.opening ??= this.openOnce()
  }

  private async openOnce(): Promise<void> {
    const opening = this.openingWindow = new Opening(this.settings.cancelGrace, (reason) => this.transport.abort(reason))
    const onAbort = () => opening.close('abort')
    this.request.signal.addEventListener('abort', onAbort, { once: true })
    if (this.request.signal.aborted) onAbort()
    try {
      await this.send({ ...this.message(outputPrompt(this.request.prompt, this.view.typed)), ...this.continuing })
    } catch (error) {
      throw sendFailure(this.settings.agentName, opening.end, this.settings.streaming, this.describe(error), error)
    } finally {
      opening.done()
      this.request.signal.removeEventListener('abort', onAbort)
    }
    if (!this.view.taskId && !this.view.directMessage) {
      this.transport.abort()
      throw new A2aError('A2A_SEND_FAILED', `The remote agent ${this.settings.agentName} answered without a task id or a message.`)
    }
    this.opened = true
  }

  /**
   * Reattaches to the task a journal recorded (after a host restart): reads it back with `GetTask`;
   * the run then follows it by polls (a task waiting for an answer parks the run again at once).
   * Rejects `A2A_RESTORE_FAILED` when the record names no task, or a task or context id longer than
   * `MAX_REMOTE_ID_CHARS` (nothing is sent: a cut id would name another), or the remote cannot tell
   * about it (an answer naming a context longer than that included).
   */
  async reattach(record: RunRecord): Promise<void> {
    const taskId = storedTaskId(record)
    // The run's task is the one recorded: a `GetTask` answer naming another is foreign (counted and ignored), never taken.
    this.view.taskId ??= taskId
    try {
      this.forward(this.view.applyTask(await this.wire.getTask(taskId, this.options())))
    } catch (error) {
      const why = this.describe(error)
      this.transport.abort()
      throw new A2aError('A2A_RESTORE_FAILED', `Task ${taskId} of the remote agent ${this.settings.agentName} could not be read back: ${why}.`, { cause: error })
    }
    this.recorded = record.question
    this.opened = true
  }

  /** What a journal keeps to reattach after a restart: the task and its context. */
  checkpoint(): { taskId?: string; contextId?: string } {
    return { ...this.view.taskId ? { taskId: this.view.taskId } : {}, ...this.view.contextId ? { contextId: this.view.contextId } : {} }
  }

  /** One message to the remote: a stream up to its first event, or a send and its answer. Closes what it opened on failure. */
  private async send(message: Outgoing): Promise<void> {
    try {
      if (this.settings.streaming) {
        this.stream = this.wire.stream(message, this.options())
        const first = await boundedFirstEvent(this, this.stream)
        if (first.done) throw new Error('the stream ended before its first event')
        this.forward(this.view.apply(first.value))
      } else {
        const answer = await this.wire.send(message, this.options())
        if (isTask(answer)) this.forward(this.view.applyTask(answer))
        else this.forward(this.view.apply({ payload: { $case: 'message', value: answer } }))
      }
    } catch (error) {
      this.transport.abort()
      await this.stream?.return?.(undefined).catch(() => {})
      throw error
    }
  }

  /**
   * The provider is going away while this run is still starting (never called once it is handed
   * over: its holder ends it). A start whose task was named meanwhile is disposed; one still sending
   * waits (bounded by `cancelGrace`) for the remote to name its task, then is disposed (its task
   * cancelled); the start rejects `ABORTED` either way.
   */
  stop(): Promise<void> {
    this.stopped = true
    if (this.opened) return this.dispose()
    if (this.opening) {
      this.openingWindow?.close('stop')
      return this.opening.then(() => this.dispose(), () => {})
    }
    // A reattach: it reads a task that already exists, nothing to wait for.
    this.transport.abort(new Error('the provider was stopped'))
    return Promise.resolve()
  }

  /** Follows the task to its end or to its next question; never rejects (a failure is an `error` result). */
  follow(): Promise<SubagentResult> {
    if (this.following) return this.following
    // A stream when the last send opened one; else polls (a send without streaming, a reattached task).
    const phase = this.stream ? followStream(this, this.stream) : pollTask(this, () => this.transport.signal.aborted)
    return this.following = phase
      .then(() => this.phaseEnd(), (error) => {
        this.view.gone ||= isTaskNotFound(error)
        this.failure ??= this.describe(error)
        return this.phaseEnd()
      })
      .finally(() => {
        if (this.view.foreign) {
          const first = this.settings.redactor.redact(JSON.stringify(this.view.firstForeignId))
          this.settings.debug('run %s (task %s): ignored %d events for other task ids (the first: %s)', this.request.runId, this.view.taskId, this.view.foreign, first)
        }
      })
  }

  /** The phase's result; a `pending` one parks the run (no request open, only the parked timeout). */
  private phaseEnd(): SubagentResult {
    clearTimeout(this.graceTimer)
    this.transport.abort()
    // Requests made while parked (a cancel) get a transport of their own.
    this.transport = new AbortController()
    this.accepting = false
    const { view, cancelReason, graceExpired, failure } = this
    const result = phaseResult({ ...this.settings, view, cancelReason, graceExpired, failure })
    if (result.stopReason === 'pending' && this.recorded?.kind === result.question!.kind) result.question = { ...result.question!, id: this.recorded.id }
    this.recorded = undefined
    if (result.stopReason === 'pending' && !this.disposal) result.question = this.park(result.question!)
    else if (result.stopReason !== 'pending') this.end()
    return result
  }

  /** The run is over; a task it leaves running or waiting (a limit of ours ended it) is cancelled, bounded by cancelGrace. */
  private end(): void {
    this.ended = true
    if (this.cancelReason === undefined) this.cancelling = this.sendCancel()
  }

  /** Parks on `question` until `parkedTimeout`; gives the question as its holder gets it (with its deadline, `expiringQuestion`). */
  private park(asked: PendingQuestion): PendingQuestion {
    const limit = this.settings.parkedTimeout
    const question = this.parked = limit ? expiringQuestion(asked, limit) : asked
    if (!limit) return question
    this.parkTimer = setTimeout(() => {
      this.expired = true
      this.settings.debug('run %s (task %s): no answer within %d ms (parkedTimeout); cancelling the task', this.request.runId, this.view.taskId, limit)
      this.cancel(`no answer came within ${limit} ms (parkedTimeout)`)
      // Nothing follows the task while parked: the service ends the run now, not at the next resume.
      this.request.onIdleEnd?.(this.expiredResult())
    }, limit)
    this.parkTimer.unref?.()
    return question
  }

  /**
   * Answers the question the run is parked on: the answer goes as a message on the same task
   * (task id and context id), and the run follows the task to its next result (which may ask
   * again). Never rejects: a run not parked, cancelled, expired or disposed gets a result saying so.
   */
  async resume(answer: string): Promise<SubagentResult> {
    const question = this.parked
    const refused = (stopReason: SubagentResult['stopReason'], diagnostic: string): SubagentResult => ({ stopReason, output: '', diagnostic })
    if (this.expired) return this.expiredResult()
    if (this.cancelReason !== undefined || this.disposal) {
      const how = this.disposal ? 'disposed' : `cancelled (${this.cancelReason})`
      return refused('aborted', `The run was ${how} while it waited for an answer.`)
    }
    if (!question) return refused('error', 'The run is not waiting for an answer (no question is pending).')
    const problem = answerProblem(answer)
    // Still parked: the holder can answer again.
    if (problem) return { stopReason: 'pending', output: '', question, diagnostic: problem }
    this.parked = undefined
    clearTimeout(this.parkTimer)
    this.view.answer()
    this.failure = undefined
    this.following = undefined
    this.stream = undefined
    this.accepting = true
    const message = { ...this.message(answer), taskId: this.view.taskId, contextId: this.view.contextId || undefined }
    try {
      await this.send(message)
    } catch (error) {
      this.view.gone ||= isTaskNotFound(error)
      const result = phaseResult({
        ...this.settings, view: this.view, cancelReason: this.cancelReason, graceExpired: this.graceExpired,
        failure: `it did not take the answer to question ${question.id}: ${this.describe(error)}`,
      })
      this.accepting = false
      this.transport = new AbortController()
      if (result.stopReason !== 'pending') this.end()
      return result
    }
    return this.follow()
  }

  private expiredResult(): SubagentResult {
    const diagnostic = `The remote task ${this.view.taskId} waited longer than ${this.settings.parkedTimeout} ms (parkedTimeout) for an answer and was cancelled.`
    return { stopReason: 'timeout', output: '', diagnostic }
  }

  done(): boolean {
    const state = this.view.state
    return this.view.directMessage || (state !== undefined && isFinal(state)) || this.graceExpired || this.view.asking()
  }

  /** Sends `CancelTask` once (when the task is still running or waiting, and not gone); the result follows from the task's state. */
  cancel(reason?: string): void {
    if (this.cancelReason !== undefined || this.ended) return
    this.cancelReason = reason || 'cancelled'
    this.graceTimer = setTimeout(() => {
      // The remote did not confirm in time: stop following it (the run ends aborted).
      this.graceExpired = true
      this.transport.abort(new LimitError(`the remote did not confirm the cancel within ${this.settings.cancelGrace} ms (cancelGrace)`))
      this.wake?.()
    }, this.settings.cancelGrace)
    this.cancelling = this.sendCancel()
    this.wake?.()
  }

  /**
   * The request has a signal of its own, bounded by `cancelGrace`: the stream may report the task canceled
   * before the answer to `CancelTask` arrives, and the phase ending then must not cut that answer off.
   */
  private async sendCancel(): Promise<void> {
    if (!this.view.taskId || this.view.gone || !(isActive(this.view.state) || isInterrupted(this.view.state))) return
    const request = new AbortController()
    const bound = setTimeout(() => request.abort(new LimitError(`the remote did not answer CancelTask within ${this.settings.cancelGrace} ms (cancelGrace)`)), this.settings.cancelGrace)
    try {
      const task = await this.wire.cancelTask(this.view.taskId, { signal: request.signal, serviceParameters: this.trace })
      this.forward(this.view.applyTask(task))
      this.wake?.()
    } catch {
      // Not cancelable (it just ended), or the remote is gone: the stream / polls show what happened.
    } finally {
      clearTimeout(bound)
    }
  }

  dispose(): Promise<void> {
    return this.disposal ??= this.disposeOnce()
  }

  private async disposeOnce(): Promise<void> {
    clearTimeout(this.parkTimer)
    this.parked = undefined
    // A task still running or waiting for us is cancelled, so disposing leaves nothing running there.
    const state = this.view.state
    if (this.view.taskId && !this.graceExpired && (isActive(state) || isInterrupted(state))) this.cancel('the run was disposed')
    await this.cancelling
    clearTimeout(this.graceTimer)
    this.transport.abort()
    this.wake?.()
    await this.stream?.return?.(undefined).catch(() => {})
    await this.following?.catch(() => {})
  }

  private message(prompt: string): Outgoing {
    return { prompt, metadata: { cordisSubagents: crossingMetadata(this.request) } }
  }

  /** Progress to the parent while a phase is followed; the remote's words pass the redactor (it may echo our credentials). */
  forward(updates: SubagentUpdate[]) {
    if (!this.accepting) return
    for (const update of updates) {
      this.update(update.text === undefined ? update : { ...update, text: this.settings.redactor.redact(update.text) })
    }
  }

  sleep(ms: number): Promise<void> {
    return wakeableSleep(ms, (wake) => this.wake = wake)
  }

  describe(error: unknown): string {
    return describeRequestError(error, this.transport.signal.reason, this.settings.redactor)
  }
}
