import { TaskState } from '@a2a-js/sdk'
import {
  AgentEvent, type AgentExecutor, type ExecutionEventBus, type ExecutionEventBusManager, type RequestContext, type ServerCallContext,
} from '@a2a-js/sdk/server'
import type { Agent, RunOptions, RunResult } from '@cordis-subagents/agent'
import {
  answerProblem, crossingFromMeta, crossingTrace, strictestCrossing,
} from '@cordis-subagents/shared'
import { EndedTasks } from './ended-tasks.js'
import type { Slot } from './guards.js'
import { type ParkedTask, ParkedTasks } from './parked-tasks.js'
import type { SavedTurn } from './saved-turns.js'
import { type Held, restoreHeld, saveTurn, setUp } from './turn-keeping.js'
import type { ExecutorHost } from './executor-host.js'
import { finalSpend } from './spend-report.js'
import { TaskBuses } from './task-buses.js'
import { TaskProgress } from './task-progress.js'
import { createTaskAgent, taskLimits } from './task-agent.js'
import { promptOf, TaskEvents } from './task-events.js'
import { tellingTo } from './task-tell.js'
import { scopeOf, taskKey } from './task-store.js'

/** The user the HTTP layer builds per request: its credential scope and the task slot reserved for a send. */
export interface ScopedUser {
  readonly isAuthenticated: boolean
  readonly userName: string
  /** The slot reserved by the HTTP layer for this send, once; undefined when none or already released. */
  claimSlot?(): Slot | undefined
}

interface Running {
  key: string
  controller: AbortController
  /** Gives the task's slot back (idempotent): when its turn's end is known, before the client can hear of it. */
  release: () => void
  done: Promise<void>
}

/** One leg of a task's turn: the first `run`, or a `resume` with the answer. */
type Leg = (options: RunOptions) => Promise<RunResult>

/**
 * Runs one agent of `ctx.agents` per task and translates its run into A2A events (1.0 shapes; the
 * SDK translates them for 0.3 clients). Honours the crossing a parent sends in
 * `metadata.cordisSubagents` and reports the spend of the task's whole tree as it goes. A turn that
 * ends `pending` parks the task (input-required, the question as the status message); the next
 * message on the task is the answer (`agent.resume`).
 */
export class AgentTaskExecutor implements AgentExecutor {
  /** The bus manager to hand the request handler (unless the host brought one). */
  readonly buses: ExecutionEventBusManager
  /** Running tasks by their event bus: the SDK hands the bus of the caller's own task to `cancelTask`. */
  private readonly running = new Map<ExecutionEventBus, Running>()
  private readonly runningKeys = new Set<string>()
  private readonly parked: ParkedTasks
  /** Agents of parked tasks that ended (cancel, expiry) still being disposed; `stop` waits for them. */
  private readonly disposing = new Set<Promise<void>>()
  private stopped = false
  /** Saved turns of tasks claimed from another host, by key, until their message is executed here. */
  private readonly adopted = new Map<string, SavedTurn>()
  private readonly ended = new EndedTasks()
  constructor(private readonly host: ExecutorHost) {
    this.buses = host.buses ?? new TaskBuses()
    const { maxParkedTasks: max, parkedTimeout: timeout } = host.config
    this.parked = new ParkedTasks({ max, timeout, expire: (task) => this.expire(task) })
  }

  /** Running or parked (a store never evicts it). */
  isRunning(key: string): boolean {
    return this.runningKeys.has(key) || this.parked.has(key)
  }

  get runningCount(): number {
    return this.running.size
  }

  /** Tasks waiting for an answer now. */
  get parkedCount(): number {
    return this.parked.size
  }

  async execute(request: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = request
    const key = taskKey(request.context, taskId)
    const ended = request.task && this.ended.get(key)
    // The task ended here after the SDK read it for this message: it stays as it ended.
    if (ended) return void bus.publish(AgentEvent.task({ ...request.task!, status: ended }))
    const events = new TaskEvents(bus, taskId, contextId, (status) => this.ended.remember(key, status))
    events.task(request)
    const user = request.context.user as ScopedUser | undefined
    const slot = user?.claimSlot?.() ?? this.host.slots.take(scopeOf(request.context))
    if (!('release' in slot)) {
      events.end(TaskState.TASK_STATE_REJECTED, `Refused: ${slot.limit} tasks are already running ${slot.full === 'server' ? 'on this server' : 'for this credential'}; try again later.`, { stopReason: 'error', code: 'TOO_MANY_TASKS' })
      return
    }
    if (this.stopped) {
      slot.release()
      events.end(TaskState.TASK_STATE_REJECTED, 'Refused: the A2A server is stopping.', { stopReason: 'error', code: 'STOPPING' })
      return
    }
    const busy = this.running.get(bus)
    if (request.task && busy) {
      // A message to a task that is running: not a turn of its own; this call follows the running one to its end.
      slot.release()
      await busy.done
      return
    }
    const controller = new AbortController()
    let finish!: () => void
    const entry: Running = { key, controller, release: () => slot.release(), done: new Promise<void>((resolve) => { finish = resolve }) }
    this.running.set(bus, entry)
    this.runningKeys.add(key)
    try {
      if (request.task) await this.answer(request, events, bus, controller.signal)
      else await this.start(request, events, bus, controller.signal)
    } catch (error) {
      // The SDK fails the task it was told of.
      events.announce()
      throw error
    } finally {
      this.running.delete(bus)
      this.runningKeys.delete(key)
      slot.release()
      finish()
    }
  }

  /** A task claimed from another host: its next message here continues it from `saved`. */
  adopt(key: string, saved: SavedTurn): void {
    this.adopted.set(key, saved)
  }

  /** Takes back an adopted turn its message never reached (the request failed first); undefined once it was used. */
  forget(key: string): SavedTurn | undefined {
    const saved = this.adopted.get(key)
    this.adopted.delete(key)
    return saved
  }

  /** Another host took this parked task over: its agent here is disposed, without an event (the task goes on there). */
  release(key: string, taskId: string, context: ServerCallContext | undefined): void {
    const parked = this.parked.take(key)
    if (!parked) return
    this.buses.cleanupByTaskId(taskId, context)
    this.dispose(parked.agent)
  }

  /** Ends a running task's turn (canceled), or a parked task at once (its agent disposed). */
  async cancelTask(_taskId: string, bus: ExecutionEventBus): Promise<void> {
    const running = this.running.get(bus)
    if (running) {
      running.controller.abort(new Error('cancelled by the client (CancelTask)'))
      return
    }
    const parked = this.parked.takeByBus(bus)
    if (parked) this.endParked(parked, parked.expired ? `no answer came within ${this.host.config.parkedTimeout} ms (parkedTimeout)` : 'cancelled by the client (CancelTask)')
  }

  /** Aborts every running task and waits for their runs to end (their final events are published); parked agents are disposed. */
  async stop(): Promise<void> {
    this.stopped = true
    const runs = [...this.running.values()]
    for (const run of runs) run.controller.abort(new Error('the A2A server is stopping'))
    for (const task of this.parked.drain()) this.dispose(task.agent)
    await Promise.all([...runs.map((run) => run.done), ...this.disposing])
  }

  /** A new task: its agent (unless the crossing refuses it), and its first turn. */
  private async start(request: RequestContext, events: TaskEvents, bus: ExecutionEventBus, signal: AbortSignal): Promise<void> {
    const { userMessage } = request
    const { rootCrossing } = this.host.agents
    const crossing = strictestCrossing(crossingFromMeta(userMessage.metadata), crossingFromMeta(request.request.metadata), rootCrossing)
    const limits = taskLimits(this.host, crossing)
    const { refusal } = limits
    if (refusal) {
      events.end(TaskState.TASK_STATE_REJECTED,
        `Refused: this task would run at depth ${refusal.depth}, deeper than the ceiling ${refusal.ceiling} of its delegation tree.`,
        { stopReason: 'error', code: 'DEPTH_REFUSED' })
      return
    }
    let agent: Agent
    try {
      agent = createTaskAgent(this.host, limits)
    } catch (error) {
      events.end(TaskState.TASK_STATE_FAILED, `The served agent could not be created: ${(error as Error).message}`, { stopReason: 'error' })
      return
    }
    const prompt = promptOf(userMessage)
    const ready = await setUp(agent, events, async () => {
      // Looked up only for a task whose parent sent a trace context: without one there is nothing to continue.
      const trace = crossingTrace(crossing)
      if (trace) this.host.telemetry()?.continueTrace(agent, trace)
      this.host.log.debug('task %s of %s runs (depth %s)', request.taskId, scopeOf(request.context), crossing.depth ?? 'not given')
      await saveTurn(this.host, request, { agent, crossing }, { leg: 'run', input: prompt })
    })
    if (ready) await this.drive(request, events, bus, { agent, crossing }, signal, (options) => agent.run(prompt, options))
  }

  /** A message on a known task: the answer to its parked agent's question. */
  private async answer(request: RequestContext, events: TaskEvents, bus: ExecutionEventBus, signal: AbortSignal): Promise<void> {
    const key = taskKey(request.context, request.taskId)
    const saved = this.adopted.get(key)
    this.adopted.delete(key)
    let parked = this.parked.take(key)
    if (!parked && saved) {
      const held = restoreHeld(this.host, saved, events)
      if (!held) return
      if (saved.turn) return this.rerun(request, events, bus, held, saved.turn, signal)
      const question = held.agent.parked
      if (!question) {
        // Only a damaged record says so: a saved turn without one is written for a parked agent alone.
        await held.agent.dispose()
        events.end(TaskState.TASK_STATE_FAILED, 'The task\'s saved agent could not be restored on this host: it is not waiting for an answer.',
          { stopReason: 'error', code: 'RESTORE_FAILED' })
        return
      }
      const { taskId, contextId, context } = request
      parked = { key, taskId, contextId, agent: held.agent, crossing: held.crossing, question, bus, context }
    }
    if (!parked) {
      events.end(TaskState.TASK_STATE_FAILED,
        `Task ${request.taskId} is not waiting for an answer on this server: its question expired or was cancelled, or it waited on another server or before a restart. Start a new task.`,
        { stopReason: 'error', code: 'NOT_PARKED' })
      return
    }
    const answer = promptOf(request.userMessage)
    const problem = answerProblem(answer)
    if (problem) {
      // Still waiting: the same question again, saying what was wrong with the answer.
      // Saved again first: a task taken over from another host has no saved turn left after its claim.
      const held = parked
      if (await setUp(held.agent, events, () => saveTurn(this.host, request, held))) this.parkAgain(held, events, `${held.question.text}\n\n(${problem})`)
      return
    }
    this.host.log.debug('task %s of %s: answer to question %s', request.taskId, scopeOf(request.context), parked.question.id)
    const { agent } = parked
    if (!await setUp(agent, events, () => saveTurn(this.host, request, parked, { leg: 'resume', input: answer }))) return
    await this.drive(request, events, bus, parked, signal, (options) => agent.resume(answer, options))
  }

  /**
   * An interrupted turn (its host died mid-turn), run again from its start on the restored agent;
   * the client's new message (and any earlier ones of the same kind) is read after the turn's input.
   */
  private async rerun(
    request: RequestContext, events: TaskEvents, bus: ExecutionEventBus, held: Held, turn: NonNullable<SavedTurn['turn']>, signal: AbortSignal,
  ): Promise<void> {
    const message = promptOf(request.userMessage)
    const messages = [...turn.messages ?? [], ...message.trim() ? [message] : []]
    const ready = await setUp(held.agent, events, async () => {
      for (const text of messages) held.agent.inbox.post(text)
      this.host.log.debug('task %s of %s: its interrupted turn runs again here', request.taskId, scopeOf(request.context))
      await saveTurn(this.host, request, held, { ...turn, messages })
    })
    if (!ready) return
    const { agent } = held
    await this.drive(request, events, bus, held, signal, (options) => turn.leg === 'run' ? agent.run(turn.input, options) : agent.resume(turn.input, options))
  }

  /**
   * Runs one leg of the task's turn and publishes its end: `pending` parks the task (the agent
   * stays); any other stop reason ends it by the states table and disposes the agent.
   */
  private async drive(
    request: RequestContext, events: TaskEvents, bus: ExecutionEventBus, held: Held, signal: AbortSignal, leg: Leg,
  ): Promise<void> {
    const { agent, crossing } = held
    const progress = new TaskProgress(events)
    let keep = false
    try {
      events.working()
      const result = await tellingTo(agent, (message) => events.told(message), () => leg({
        signal,
        onSpend: progress.charge,
        onEvent: (event) => { if (event.type === 'tool-call') progress.toolCall(event.call.name, event.step) },
      }))
      // The final status carries the last figure: an update still pending would only come right before it.
      progress.discard()
      // A client that heard the end may start its next task at once: the slot is not held through the agent's disposal.
      this.running.get(bus)?.release()
      const ours = { stopReason: result.stopReason, ...finalSpend(result, progress.last) }
      if (result.stopReason === 'pending' && result.question) {
        const { taskId, contextId, context } = request
        const key = taskKey(context, taskId)
        keep = this.parked.add({ key, taskId, contextId, agent, crossing, question: result.question, bus, context })
        if (keep) {
          // Saved before the client hears of the question: from then on any host can take the answer.
          await saveTurn(this.host, request, held)
          events.park(result.question, ours)
        } else {
          events.end(TaskState.TASK_STATE_FAILED,
            `The agent asked a question, but ${this.parked.max} tasks already wait for answers on this server (maxParkedTasks); answer or cancel one of them and start again.`,
            { ...ours, stopReason: 'error', code: 'TOO_MANY_PARKED' })
        }
      } else {
        if (result.text) events.artifact(result.text)
        const state = result.stopReason === 'completed' ? TaskState.TASK_STATE_COMPLETED
          : result.stopReason === 'aborted' ? TaskState.TASK_STATE_CANCELED : TaskState.TASK_STATE_FAILED
        const said = state === TaskState.TASK_STATE_COMPLETED ? undefined : (result.diagnostic || `the agent's turn ended with ${result.stopReason}`)
        events.end(state, said, ours)
      }
      this.host.log.debug('task %s of %s: the turn ended %s', request.taskId, scopeOf(request.context), result.stopReason)
    } catch (error) {
      // run/resume refused (the agent is busy or not parked): the task ends, and no report follows its final status.
      progress.discard()
      this.running.get(bus)?.release()
      events.end(TaskState.TASK_STATE_FAILED, `The served agent could not go on: ${(error as Error).message}`, { stopReason: 'error' })
    } finally {
      void progress.finish()
      if (!keep) {
        await agent.dispose()
        await this.host.turns?.dropEnded(request.taskId, request.context).catch(() => {})
      }
    }
  }

  private parkAgain(parked: ParkedTask, events: TaskEvents, text: string): void {
    if (this.parked.add(parked)) events.park({ ...parked.question, text }, { stopReason: 'pending' })
    else {
      events.end(TaskState.TASK_STATE_FAILED, 'The task could not wait again (maxParkedTasks).', { stopReason: 'error', code: 'TOO_MANY_PARKED' })
      this.dispose(parked.agent)
    }
  }

  /** `parkedTimeout` passed: the task is cancelled through the request handler (the store records it), else ended here. */
  private expire(task: ParkedTask): void {
    this.host.log.debug('task %s: no answer within %d ms (parkedTimeout); cancelling it', task.taskId, this.host.config.parkedTimeout)
    const fallback = () => {
      const left = this.parked.take(task.key)
      if (left) this.endParked(left, `no answer came within ${this.host.config.parkedTimeout} ms (parkedTimeout)`)
    }
    if (!this.host.cancelTask) return fallback()
    this.host.cancelTask(task.taskId, task.context).then(fallback, fallback)
  }

  /** Ends a parked task (canceled), disposes its agent and releases the bus the SDK kept for it. */
  private endParked(task: ParkedTask, why: string): void {
    new TaskEvents(task.bus, task.taskId, task.contextId, (status) => this.ended.remember(task.key, status))
      .end(TaskState.TASK_STATE_CANCELED, `Cancelled while waiting for an answer: ${why}.`, { stopReason: 'aborted' })
    this.buses.cleanupByTaskId(task.taskId, task.context)
    this.dispose(task.agent)
  }

  private dispose(agent: Agent): void {
    const disposal = agent.dispose().catch(() => {}).finally(() => this.disposing.delete(disposal))
    this.disposing.add(disposal)
  }
}
