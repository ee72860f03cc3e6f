import type { StreamResponse, Task } from '@a2a-js/sdk'
import { capBytes, describeError, type Redactor } from '@cordis-subagents/shared'
import {
  capDiagnostic, type ProviderStartRequest, startProviderRun, type SubagentResult, type SubagentRun, type SubagentUpdate,
} from '@cordis-subagents/subagents-service'
import { LimitError } from './bounded-fetch.js'
import { crossingMetadata, traceHeaders } from './crossing.js'
import { A2aError } from './errors.js'
import { isActive, isFinal, outcomeOf, stateName } from './task-state.js'
import { TaskView } from './task-view.js'
import { type A2aWire, isTask, type Outgoing, TaskGoneError, type WireOptions } from './wire.js'

export interface RunSettings {
  /** The remote's protocol version, spoken by its SDK's client. */
  wire: A2aWire
  /** The card says the agent streams: a streamed send; else a send + task polls. */
  streaming: boolean
  /** For diagnostics: the agent card's name and where it is. */
  agentName: string
  requestTimeout: number
  idleTimeout: number
  pollInterval: number
  /** A polled task showing no change this long has failed silently. */
  stuckTimeout: number
  cancelGrace: number
  maxOutputBytes: number
  redactor: Redactor
  /** Debug log (the plugin's logger); the provider logs what it ignored there. */
  debug: (format: string, ...args: unknown[]) => void
  /** Every run of the provider not yet disposed, starting ones included: stopped when the plugin is. */
  live: Set<LiveRun>
}

/** A run as the provider sees it: `stop()` closes its requests at once (starting) or disposes it. */
export interface LiveRun {
  stop(): Promise<void>
}

/**
 * One delegation to a remote A2A agent. `start` fulfils once the remote accepted the task (its
 * first event, or the send's answer): the task id is the run's `childId`. From then on the run
 * follows the task (stream, or polls) to a final state; cancel sends `CancelTask`; dispose cancels
 * a task still running, stops every request of the run and waits for them.
 */
export function startA2aRun(settings: RunSettings, request: ProviderStartRequest): Promise<SubagentRun> {
  return startProviderRun(request, async ({ update }) => {
    const run = new A2aRun(settings, request, update)
    settings.live.add(run)
    try {
      await run.open()
    } catch (error) {
      settings.live.delete(run)
      throw error
    }
    return {
      ...run.view.taskId ? { childId: run.view.taskId } : {},
      begin: () => run.follow(),
      cancel: (reason) => run.cancel(reason),
      dispose: () => run.dispose().finally(() => settings.live.delete(run)),
    }
  })
}

class A2aRun implements LiveRun {
  readonly view: TaskView
  /** Aborts every request of this run (dispose, a cancel that got no answer in time). */
  private readonly transport = new AbortController()
  private readonly options: WireOptions
  private stream?: AsyncIterator<StreamResponse>
  private cancelReason?: string
  private cancelling?: Promise<void>
  private graceTimer?: NodeJS.Timeout
  private graceExpired = false
  private following?: Promise<SubagentResult>
  private wake?: () => void
  private failure?: string
  private opened = false
  private stopped = false
  private disposal?: Promise<void>

  constructor(
    private readonly settings: RunSettings,
    private readonly request: ProviderStartRequest,
    private readonly update: (update: SubagentUpdate) => void,
  ) {
    this.view = new TaskView(settings.maxOutputBytes)
    this.options = { signal: this.transport.signal, serviceParameters: traceHeaders(request) }
  }

  /**
   * Sends the prompt; resolves once the remote answered (the task exists), rejects `A2A_SEND_FAILED`
   * when it did not. A stream must bring its first event within `requestTimeout` (keep-alive
   * comments do not count), and an abort before that event closes it at once (`ABORTED`): there
   * is no task id yet to cancel, and an open stream would outlive the run.
   */
  async open(): Promise<void> {
    const message = this.message()
    const onAbort = () => this.transport.abort(this.request.signal.reason)
    try {
      if (this.settings.streaming) {
        this.request.signal.addEventListener('abort', onAbort, { once: true })
        if (this.request.signal.aborted) onAbort()
        this.stream = this.settings.wire.stream(message, this.options)
        const first = await this.boundedFirstEvent(this.stream)
        if (first.done) throw new Error('the stream ended before its first event')
        this.forward(this.view.apply(first.value))
      } else {
        const answer = await this.settings.wire.send(message, this.options)
        if (isTask(answer)) this.forward(this.view.applyTask(answer))
        else this.forward(this.view.apply({ payload: { $case: 'message', value: answer } }))
      }
    } catch (error) {
      this.transport.abort()
      await this.stream?.return?.(undefined).catch(() => {})
      if (this.stopped) {
        throw new A2aError('ABORTED', `The provider was stopped while the remote agent ${this.settings.agentName} was accepting the task; its request was closed.`)
      }
      if (this.settings.streaming && this.request.signal.aborted) {
        throw new A2aError('ABORTED', `The delegation was aborted before the remote agent ${this.settings.agentName} sent its first event; the stream was closed.`)
      }
      const why = this.describe(error)
      throw new A2aError('A2A_SEND_FAILED', `The remote agent ${this.settings.agentName} did not accept the task: ${why}.`, { cause: error })
    } finally {
      this.request.signal.removeEventListener('abort', onAbort)
    }
    if (!this.view.taskId && !this.view.directMessage) {
      this.transport.abort()
      throw new A2aError('A2A_SEND_FAILED', `The remote agent ${this.settings.agentName} answered without a task id or a message.`)
    }
    this.opened = true
  }

  /** The provider is going away: a starting run closes its request at once, a started one is disposed. */
  stop(): Promise<void> {
    this.stopped = true
    if (this.opened) return this.dispose()
    this.transport.abort(new Error('the provider was stopped'))
    return Promise.resolve()
  }

  /** Follows the task to its end; never rejects (a failure is an `error` result). */
  follow(): Promise<SubagentResult> {
    return this.following ??= (this.settings.streaming ? this.followStream() : this.poll())
      .then(() => this.result(), (error) => {
        this.failure ??= this.describe(error)
        return this.result()
      })
      .finally(() => {
        clearTimeout(this.graceTimer)
        this.transport.abort()
        if (this.view.foreign) {
          const first = this.settings.redactor.redact(JSON.stringify(this.view.firstForeignId))
          this.settings.debug('run %s (task %s): ignored %d events for other task ids (the first: %s)', this.request.runId, this.view.taskId, this.view.foreign, first)
        }
      })
  }

  /** The stream's first event, or a `LimitError` after `requestTimeout` (bytes that are no event do not count). */
  private async boundedFirstEvent(stream: AsyncIterator<StreamResponse>) {
    const limit = this.settings.requestTimeout
    const timer = setTimeout(() => this.transport.abort(new LimitError(`no first event within ${limit} ms (requestTimeout)`)), limit)
    try {
      return await stream.next()
    } finally {
      clearTimeout(timer)
    }
  }

  /** Follows the stream; `idleTimeout` counts from the last event (keep-alive comments do not keep a run alive). */
  private async followStream(): Promise<void> {
    const stream = this.stream!
    const idle = this.settings.idleTimeout
    let timer: NodeJS.Timeout | undefined
    const arm = () => {
      clearTimeout(timer)
      timer = setTimeout(() => this.transport.abort(
        new LimitError(`the stream was silent for ${idle} ms (idleTimeout): no event came (keep-alive comments do not count)`),
      ), idle)
    }
    try {
      arm()
      while (!this.done()) {
        const next = await stream.next()
        arm()
        if (next.done) {
          if (!this.done()) this.failure ??= `the stream ended while the task was ${stateName(this.view.state)}`
          return
        }
        this.forward(this.view.apply(next.value))
      }
    } finally {
      clearTimeout(timer)
      await stream.return?.(undefined).catch(() => {})
    }
  }

  /**
   * Polls the task to its end. A task the remote no longer knows ends the run at once; one that
   * answers without any change for `stuckTimeout` (an executor that threw leaves its task
   * `working` forever) ends it too: both are errors naming the task and what was seen.
   */
  private async poll(): Promise<void> {
    let lastAnswer = Date.now()
    let lastProgress = Date.now()
    let mark = this.view.progressMark()
    while (!this.done()) {
      await this.sleep(this.settings.pollInterval)
      if (this.done() || this.transport.signal.aborted) return
      let task: Task
      try {
        task = await this.settings.wire.getTask(this.view.taskId!, this.options)
      } catch (error) {
        if (error instanceof TaskGoneError) {
          throw new Error(`the remote no longer knows the task (task not found: ${this.settings.redactor.redact(error.message)}); it was lost or its executor failed`)
        }
        if (this.transport.signal.aborted) throw error
        if (Date.now() - lastAnswer > this.settings.idleTimeout) {
          throw new Error(`no poll was answered for ${this.settings.idleTimeout} ms (idleTimeout); the last error: ${this.describe(error)}`)
        }
        continue
      }
      lastAnswer = Date.now()
      this.forward(this.view.applyTask(task))
      const now = this.view.progressMark()
      if (now !== mark) {
        mark = now
        lastProgress = lastAnswer
      } else if (!this.done() && lastAnswer - lastProgress > this.settings.stuckTimeout) {
        throw new Error(`the task showed no progress for ${this.settings.stuckTimeout} ms (stuckTimeout): `
          + `still ${stateName(this.view.state)}, no new status, message or artifact; its executor has likely failed`)
      }
    }
  }

  private done(): boolean {
    return this.view.directMessage || (this.view.state !== undefined && isFinal(this.view.state)) || this.graceExpired
  }

  /** Sends `CancelTask` once (when the task is still running); the result follows from the task's state. */
  cancel(reason?: string): void {
    if (this.cancelReason !== undefined) return
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

  private async sendCancel(): Promise<void> {
    if (!this.view.taskId || !isActive(this.view.state)) return
    try {
      const task = await this.settings.wire.cancelTask(this.view.taskId, this.options)
      this.forward(this.view.applyTask(task))
      this.wake?.()
    } catch {
      // Not cancelable (it just ended), or the remote is gone: the stream / polls show what happened.
    }
  }

  dispose(): Promise<void> {
    return this.disposal ??= this.disposeOnce()
  }

  private async disposeOnce(): Promise<void> {
    // A task still running remotely is cancelled, so disposing leaves nothing running there.
    if (!this.done() && this.view.taskId && isActive(this.view.state)) this.cancel('the run was disposed')
    await this.cancelling
    clearTimeout(this.graceTimer)
    this.transport.abort()
    this.wake?.()
    await this.stream?.return?.(undefined).catch(() => {})
    await this.following?.catch(() => {})
  }

  private result(): SubagentResult {
    const { text, truncated } = this.view.output()
    const spend = this.view.spend
    const usage = {
      ...this.view.usage ? { usage: this.view.usage } : {},
      ...spend ? { work: { steps: spend.steps, toolCalls: spend.toolCalls, delegations: spend.delegations } } : {},
    }
    const notes: string[] = []
    if (truncated) notes.push(`The output was cut at ${this.settings.maxOutputBytes} bytes (maxOutputBytes).`)
    const finish = (result: SubagentResult) => {
      const diagnostic = [result.diagnostic, ...notes].filter(Boolean).join(' ')
      // The output is the remote's text too: redacted, and cut again (a mask may be longer than what it hides).
      const output = capBytes(this.settings.redactor.redact(result.output), this.settings.maxOutputBytes, '')
      return { ...result, output, ...diagnostic ? { diagnostic: capDiagnostic(this.settings.redactor.redact(diagnostic)) } : {}, ...usage }
    }
    if (this.view.directMessage) return finish({ stopReason: 'completed', output: text })
    const state = this.view.state
    if (state !== undefined && isFinal(state)) {
      const outcome = outcomeOf(state, this.view.lastAgentText)
      const stopReason = outcome.stopReason === 'error' && this.view.refinedStop ? this.view.refinedStop : outcome.stopReason
      return finish({ stopReason, output: text, ...outcome.headline ? { diagnostic: `${outcome.headline} (task ${this.view.taskId})` } : {} })
    }
    if (this.cancelReason !== undefined) {
      const unconfirmed = this.graceExpired ? ` The remote did not confirm within ${this.settings.cancelGrace} ms (cancelGrace); task ${this.view.taskId} was last ${stateName(state)}.` : ''
      return finish({ stopReason: 'aborted', output: text, diagnostic: `Cancelled: ${this.cancelReason}.${unconfirmed}` })
    }
    return finish({
      stopReason: 'error',
      output: text,
      diagnostic: `Lost the remote task ${this.view.taskId} of ${this.settings.agentName} (last state ${stateName(state)}): ${this.failure ?? 'it ended without a final state'}.`,
    })
  }

  private message(): Outgoing {
    return { prompt: this.request.prompt, metadata: { cordisSubagents: crossingMetadata(this.request) } }
  }

  /** Progress to the parent; the remote's words pass the redactor (it may echo our credentials). */
  private forward(updates: SubagentUpdate[]) {
    for (const update of updates) {
      this.update(update.text === undefined ? update : { ...update, text: this.settings.redactor.redact(update.text) })
    }
  }

  /** Waits `ms`, or less when woken (cancel, dispose). */
  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms)
      const wake = this.wake = done
      function done() {
        clearTimeout(timer)
        resolve()
      }
      void wake
    })
  }

  private describe(error: unknown): string {
    const reason = this.transport.signal.reason
    if (reason instanceof LimitError) return reason.message
    if (error instanceof LimitError) return error.message
    const cause = (error as { cause?: { code?: string; message?: string } } | undefined)?.cause
    const base = describeError(error)
    const detail = cause?.code ? ` (${cause.code}${cause.message ? `: ${cause.message}` : ''})` : ''
    return this.settings.redactor.redact(`${base}${detail}`).slice(0, 1_000)
  }
}
