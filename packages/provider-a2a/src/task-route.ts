import type { Message, StreamResponse, Task, TaskState } from '@a2a-js/sdk'
import { LimitError } from './bounded-fetch.js'
import type { Endpoint } from './endpoint.js'
import type { EndpointPool } from './endpoint-pool.js'
import { describeFailure, type Exchange, isNetworkFailure, watchExchanges } from './host-failure.js'
import { isFinal, isInterrupted, stateName } from './task-state.js'
import { type A2aWire, isTask, type Outgoing, TaskGoneError, type WireOptions } from './wire.js'

/** Reads of a task whose stream broke, at an endpoint that answers 5xx (see `readAtOwner`). */
const GATEWAY_TRIES = 3

/**
 * The wire one run talks through: the endpoint that took its task, and, when that host goes away
 * mid-task, any other endpoint of the pool that answers for the task (several hosts on one shared
 * task store). The run itself is unchanged: a stream whose host went away continues as task
 * snapshots, polled from whoever answers, and its own limits (`idleTimeout`) still bound it.
 * Only reads move: the task is never sent again, so it never runs twice.
 */
export class TaskRoute implements A2aWire {
  /** The endpoint answering for the task: where it started, or one that knew it after that host went away. */
  owner: Endpoint
  taskId?: string
  private state?: TaskState
  /** The answer was a Message, not a task: nothing to follow. */
  private direct = false
  private exchange: Exchange = {}
  /** A failed poll asks the other endpoints once, until the owner answers again. */
  private askedElsewhere = false

  constructor(private readonly pool: EndpointPool, readonly first: Endpoint, private readonly pollInterval: number) {
    this.owner = first
  }

  /** What the latest request of this run got (for the start's failover rule). */
  get lastExchange(): Exchange {
    return this.exchange
  }

  stream(message: Outgoing, options: WireOptions): AsyncIterator<StreamResponse> {
    this.exchange = watchExchanges(options.signal)
    return this.follow(wireOf(this.owner).stream(message, options), options)
  }

  async send(message: Outgoing, options: WireOptions): Promise<Task | Message> {
    this.exchange = watchExchanges(options.signal)
    const answer = await wireOf(this.owner).send(message, options)
    if (isTask(answer)) {
      this.taskId ||= answer.id
      this.note(answer.status?.state)
    }
    return answer
  }

  async getTask(id: string, options: WireOptions): Promise<Task> {
    try {
      const task = await wireOf(this.owner).getTask(id, options)
      this.askedElsewhere = false
      this.note(task.status?.state)
      return task
    } catch (error) {
      if (options.signal.aborted || error instanceof TaskGoneError || !this.hostFailed(error)) throw error
      this.owner.markDown(`tasks/get for task ${id} failed: ${describeFailure(error)}`)
      if (this.askedElsewhere) throw error
      this.askedElsewhere = true
      const task = await this.findElsewhere(id, options)
      if (!task) throw error
      return task
    }
  }

  cancelTask(id: string, options: WireOptions): Promise<Task> {
    return wireOf(this.owner).cancelTask(id, options)
  }

  /** The owner's stream, passed through; when it ends or breaks before a final state, the task is looked for. */
  private async *follow(inner: AsyncIterator<StreamResponse>, options: WireOptions): AsyncGenerator<StreamResponse, undefined> {
    let why: string
    try {
      for (;;) {
        const next = await inner.next()
        if (next.done) {
          why = `its stream ended while the task was ${stateName(this.state)}`
          break
        }
        this.noteEvent(next.value)
        // The run stops reading once the task is final or asks us something (it parks): then the
        // stream is closed from there. A stream that ends by itself is looked at below.
        yield next.value
      }
    } catch (error) {
      if (options.signal.aborted || !this.taskId || error instanceof LimitError || !isNetworkFailure(error)) throw error
      why = `its stream broke while the task was ${stateName(this.state)} (${describeFailure(error)})`
    } finally {
      await inner.return?.(undefined)?.catch?.(() => {})
    }
    // No task yet: the run reports the send as failed. A direct message, a final state, or a task
    // waiting for our answer (the run parks): nothing to follow.
    if (!this.taskId || this.settled) return undefined
    yield* this.rescue(why, options)
    return undefined
  }

  /** The stream is gone mid-task: the owner may still answer (a proxy cut the stream), else another endpoint. */
  private async *rescue(why: string, options: WireOptions): AsyncGenerator<StreamResponse> {
    const id = this.taskId!
    const read = await this.readAtOwner(id, options)
    const ownerError = read.error
    let task = read.task
    if (!task) {
      const gone = this.owner
      if (!(ownerError instanceof TaskGoneError)) gone.markDown(`it went away while running task ${id}: ${why}`)
      task = await this.findElsewhere(id, options)
      if (!task) {
        const elsewhere = this.pool.endpoints.length > 1 ? '; no other endpoint knows the task' : ''
        const failed = `tasks/get there failed (${describeFailure(ownerError)})${elsewhere}`
        const message = `the agent host ${gone.host} went away while running task ${id}: ${why}, and ${failed}`
        // The owner (where a cancel would go) answered that it does not know the task: the run sends it no CancelTask.
        throw ownerError instanceof TaskGoneError ? new TaskGoneError(message, { cause: ownerError }) : new Error(message)
      }
    }
    yield* this.pollFrom(task, options)
  }

  /**
   * The task as snapshots, polled every `pollInterval`. A snapshot is passed on only when it changed,
   * so a task that stands still (or a host that stops answering) ends the run by its `idleTimeout`.
   */
  private async *pollFrom(first: Task, options: WireOptions): AsyncGenerator<StreamResponse> {
    let task = first
    let mark = ''
    for (;;) {
      this.note(task.status?.state)
      const now = markOf(task)
      if (now !== mark) {
        mark = now
        yield { payload: { $case: 'task', value: task } }
      }
      if (this.settled) return
      await pause(this.pollInterval, options.signal)
      try {
        task = await this.getTask(task.id || this.taskId!, options)
      } catch (error) {
        if (options.signal.aborted) throw error
        if (error instanceof TaskGoneError) {
          const why = `the agent host ${this.owner.host} no longer knows task ${this.taskId} (${describeFailure(error)})`
          throw new TaskGoneError(why, { cause: error })
        }
        // An unanswered poll: the next one may be answered; the run's idleTimeout bounds the wait.
      }
    }
  }

  /**
   * The task, read at its owner. An answer of 5xx comes from something that answers (a load
   * balancer in front of several hosts, whose kept-alive connection to the dead host broke): asked
   * again, at once (the balancer has marked that host failed) and then after `pollInterval`, it may
   * reach a live host. At most `GATEWAY_TRIES` reads; a failure to connect is not read again (the
   * endpoint itself is down).
   */
  private async readAtOwner(id: string, options: WireOptions): Promise<{ task?: Task; error?: unknown }> {
    for (let attempt = 1; ; attempt++) {
      try {
        return { task: await wireOf(this.owner).getTask(id, options) }
      } catch (error) {
        if (options.signal.aborted) throw error
        const { status } = this.exchange
        if (attempt >= GATEWAY_TRIES || error instanceof TaskGoneError || status === undefined || status < 500) return { error }
        await pause(attempt === 1 ? 0 : this.pollInterval, options.signal)
      }
    }
  }

  /** Another endpoint that answers for the task becomes its owner (reads only: nothing is sent again). */
  private async findElsewhere(id: string, options: WireOptions): Promise<Task | undefined> {
    for (const endpoint of this.pool.order()) {
      if (endpoint === this.owner) continue
      try {
        const task = await wireOf(endpoint).getTask(id, options)
        this.owner = endpoint
        endpoint.markUp()
        return task
      } catch (error) {
        if (options.signal.aborted) throw error
        if (!(error instanceof TaskGoneError) && this.hostFailed(error)) endpoint.markDown(`tasks/get failed: ${describeFailure(error)}`)
      }
    }
    return undefined
  }

  private hostFailed(error: unknown): boolean {
    const { status } = this.exchange
    return isNetworkFailure(error) || error instanceof LimitError || (status !== undefined && status >= 500)
  }

  /** Nothing more to follow for now: a direct answer, a final state, or a question for us. */
  private get settled(): boolean {
    return this.direct || (this.state !== undefined && (isFinal(this.state) || isInterrupted(this.state)))
  }

  private noteEvent(event: StreamResponse): void {
    const payload = event.payload
    if (!payload) return
    const id = payload.$case === 'task' ? payload.value.id : payload.value.taskId
    // Events of another task are ignored, as the run's view ignores them.
    if (id && this.taskId && id !== this.taskId) return
    if (payload.$case === 'message') {
      this.direct = true
      return
    }
    this.taskId ||= id
    if (payload.$case === 'task') this.note(payload.value.status?.state)
    else if (payload.$case === 'statusUpdate') this.note(payload.value.status?.state)
  }

  /** A final state from the owner: the host answered, so it is healthy. */
  private note(state: TaskState | undefined): void {
    if (state === undefined) return
    this.state = state
    if (isFinal(state)) this.owner.markUp()
  }
}

function wireOf(endpoint: Endpoint): A2aWire {
  // Only endpoints whose card was read take or answer for tasks; a card is never unloaded.
  return endpoint.loaded!.wire
}

/** What tells one snapshot from the next (a change re-arms the run's idle timer). */
function markOf(task: Task): string {
  try {
    return JSON.stringify(task)
  } catch {
    return `${task.status?.state}|${task.status?.timestamp}|${task.artifacts?.length}`
  }
}

/** Waits `ms`; rejects with the signal's reason when it aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal.reason)
    }
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal.addEventListener('abort', onAbort, { once: true })
  })
}
