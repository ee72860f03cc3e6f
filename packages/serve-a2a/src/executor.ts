import { randomUUID } from 'node:crypto'
import { Role, type Message, type Part, TaskState } from '@a2a-js/sdk'
import { AgentEvent, type AgentExecutor, type ExecutionEventBus, type RequestContext } from '@a2a-js/sdk/server'
import type { Agent, AgentRuntime, BudgetLimits, BudgetSpend, RunResult } from '@cordis-subagents/agent'
import {
  type Crossing, crossingFromEnv, crossingFromMeta, crossingTrace, CROSSING_BUDGET_KEYS, CROSSING_KEY, depthRefusal, spendValue,
  strictestCrossing, type TraceContextHeaders,
} from '@cordis-subagents/shared'
import type { ToolRegistry } from '@cordis-subagents/tools'
import type { BudgetConfig, Config } from './config.js'
import type { Slot, TaskSlots } from './guards.js'
import { scopeOf, taskKey } from './task-store.js'

/** Progress updates (tool calls) sent per task; more are not sent (each one is kept in the task's history). */
const MAX_PROGRESS_UPDATES = 64
/** Longest prompt text taken from a message (characters); the body cap bounds it first. */
const MAX_PROMPT_CHARS = 1024 * 1024

/** What the executor needs from the host; `telemetry` is read per task (it may come and go). */
export interface ExecutorHost {
  agents: AgentRuntime
  tools: ToolRegistry
  telemetry(): { continueTrace(agent: Agent, context: TraceContextHeaders | undefined): boolean } | undefined
  slots: TaskSlots
  config: Config
  log: { debug(format: string, ...args: unknown[]): void }
}

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
  done: Promise<void>
}

/**
 * Runs one agent of `ctx.agents` per task and translates its run into A2A events (1.0 shapes; the
 * SDK translates them for 0.3 clients). Honours the crossing a parent sends in
 * `metadata.cordisSubagents` and reports the spend of the task's whole tree as it goes.
 */
export class AgentTaskExecutor implements AgentExecutor {
  /** Running tasks by their event bus: the SDK hands the bus of the caller's own task to `cancelTask`. */
  private readonly running = new Map<ExecutionEventBus, Running>()
  private readonly runningKeys = new Set<string>()
  private stopped = false
  /** What a parent host of ours passed this process (SUBAGENT_*): it bounds every task here too. */
  private readonly fromEnv: Crossing

  constructor(private readonly host: ExecutorHost, env: NodeJS.ProcessEnv = process.env) {
    this.fromEnv = crossingFromEnv(env).crossing
  }

  isRunning(key: string): boolean {
    return this.runningKeys.has(key)
  }

  get runningCount(): number {
    return this.running.size
  }

  async execute(request: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = request
    const events = new TaskEvents(bus, taskId, contextId)
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
    const key = taskKey(request.context, taskId)
    const controller = new AbortController()
    let finish!: () => void
    const entry: Running = { key, controller, done: new Promise<void>((resolve) => { finish = resolve }) }
    this.running.set(bus, entry)
    this.runningKeys.add(key)
    try {
      await this.run(request, events, controller.signal)
    } finally {
      this.running.delete(bus)
      this.runningKeys.delete(key)
      slot.release()
      finish()
    }
  }

  async cancelTask(_taskId: string, bus: ExecutionEventBus): Promise<void> {
    this.running.get(bus)?.controller.abort(new Error('cancelled by the client (CancelTask)'))
  }

  /** Aborts every running task and waits for their runs to end (their final events are published). */
  async stop(): Promise<void> {
    this.stopped = true
    const runs = [...this.running.values()]
    for (const run of runs) run.controller.abort(new Error('the A2A server is stopping'))
    await Promise.all(runs.map((run) => run.done))
  }

  private async run(request: RequestContext, events: TaskEvents, signal: AbortSignal): Promise<void> {
    const { config } = this.host
    const { userMessage } = request
    const crossing = strictestCrossing(crossingFromMeta(userMessage.metadata), crossingFromMeta(request.request.metadata), this.fromEnv)
    const refusal = depthRefusal(crossing, config.maxDepth)
    if (refusal) {
      events.end(TaskState.TASK_STATE_REJECTED,
        `Refused: this task would run at depth ${refusal.depth}, deeper than the ceiling ${refusal.ceiling} of its delegation tree.`,
        { stopReason: 'error', code: 'DEPTH_REFUSED' })
      return
    }
    let agent: Agent
    try {
      agent = this.host.agents.create({
        label: 'a2a',
        model: config.model,
        // `{depth}` in the persona: how deep in its delegation tree this task runs (the parent says; else this host's root depth).
        persona: config.persona?.replaceAll('{depth}', String(crossing.depth ?? this.host.agents.rootDepth)),
        cwd: config.cwd,
        tools: this.toolsFor(crossing),
        budget: this.budgetFor(crossing),
      })
    } catch (error) {
      events.end(TaskState.TASK_STATE_FAILED, `The served agent could not be created: ${(error as Error).message}`, { stopReason: 'error' })
      return
    }
    this.host.telemetry()?.continueTrace(agent, crossingTrace(crossing))
    const scope = scopeOf(request.context)
    this.host.log.debug('task %s of %s runs (depth %s)', request.taskId, scope, crossing.depth ?? 'not given')
    const spend = new SpendReporter((value) => events.working(undefined, value))
    let progress = 0
    try {
      events.working()
      const result = await agent.run(promptOf(request.userMessage), {
        signal,
        onSpend: (spent) => spend.report(spent),
        onEvent: (event) => {
          if (event.type !== 'tool-call' || ++progress > MAX_PROGRESS_UPDATES) return
          events.working(`calls ${event.call.name}`, { update: { kind: 'tool-call', tool: event.call.name, step: event.step } })
        },
      })
      spend.stop()
      if (result.text) events.artifact(result.text)
      const state = result.stopReason === 'completed' ? TaskState.TASK_STATE_COMPLETED
        : result.stopReason === 'aborted' ? TaskState.TASK_STATE_CANCELED : TaskState.TASK_STATE_FAILED
      const said = state === TaskState.TASK_STATE_COMPLETED ? undefined : (result.diagnostic || `the agent's turn ended with ${result.stopReason}`)
      events.end(state, said, { stopReason: result.stopReason, ...finalSpend(result, spend.last) })
      this.host.log.debug('task %s of %s ended %s', request.taskId, scope, result.stopReason)
    } finally {
      spend.stop()
      await agent.dispose()
    }
  }

  /** The configured tools, under the parent's tool ceiling (an intersection: never more than either). */
  private toolsFor(crossing: Crossing) {
    const { tools } = this.host.config
    // The schema fills an absent list with []: an empty list is "not given", not "nothing".
    const filter = { ...tools?.allow?.length ? { allow: tools.allow } : {}, ...tools?.deny?.length ? { deny: tools.deny } : {} }
    let view = this.host.tools.view(Object.keys(filter).length ? filter : undefined)
    if (crossing.allowedTools) view = view.restrict({ allow: crossing.allowedTools })
    return view
  }

  /**
   * The task's root limits: the configured budget lowered by the parent's remaining budget, and the
   * depth ceiling counted from here (a root run here is `rootDepth`; the parent said how deep it is).
   */
  private budgetFor(crossing: Crossing): BudgetLimits | undefined {
    const limits: BudgetLimits = lowest(this.host.config.budget, crossing.budget)
    const ceiling = Math.min(crossing.maxDepth ?? Infinity, this.host.config.maxDepth ?? Infinity)
    if (ceiling !== Infinity) {
      const depth = crossing.depth ?? this.host.agents.rootDepth
      limits.maxDepth = this.host.agents.rootDepth + Math.max(0, ceiling - depth)
    }
    return Object.keys(limits).length ? limits : undefined
  }
}

/** The A2A events of one task, in the SDK's 1.0 shapes. */
class TaskEvents {
  constructor(private readonly bus: ExecutionEventBus, private readonly taskId: string, private readonly contextId: string) {}

  /** The first event of every execution: the task (a follow-up message re-announces its task). */
  task(request: RequestContext): void {
    this.bus.publish(AgentEvent.task(request.task ?? {
      id: this.taskId, contextId: this.contextId,
      status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
      artifacts: [], history: [request.userMessage], metadata: undefined,
    }))
  }

  working(text?: string, ours?: Record<string, unknown>): void {
    this.status(TaskState.TASK_STATE_WORKING, text, ours)
  }

  artifact(text: string): void {
    this.bus.publish(AgentEvent.artifactUpdate({
      taskId: this.taskId, contextId: this.contextId, append: false, lastChunk: true, metadata: undefined,
      artifact: { artifactId: 'answer', name: 'answer', description: '', parts: [textPart(text)], metadata: undefined, extensions: [] },
    }))
  }

  /** A final state, then the end of the execution. */
  end(state: TaskState, text: string | undefined, ours: Record<string, unknown>): void {
    this.status(state, text, ours)
    this.bus.finished()
  }

  private status(state: TaskState, text: string | undefined, ours: Record<string, unknown> | undefined): void {
    this.bus.publish(AgentEvent.statusUpdate({
      taskId: this.taskId, contextId: this.contextId,
      metadata: ours ? { [CROSSING_KEY]: ours } : undefined,
      status: { state, message: text === undefined ? undefined : this.message(text), timestamp: new Date().toISOString() },
    }))
  }

  private message(text: string): Message {
    return {
      messageId: randomUUID(), contextId: this.contextId, taskId: this.taskId, role: Role.ROLE_AGENT,
      parts: [textPart(text)], metadata: undefined, extensions: [], referenceTaskIds: [],
    }
  }
}

/**
 * Coalesces the run's spend (called synchronously after every charge) into at most one report per
 * event-loop turn; the newest spend always wins, and the final status carries the last one.
 */
class SpendReporter {
  last?: Readonly<BudgetSpend>
  private pending?: NodeJS.Immediate

  constructor(private readonly send: (value: Record<string, unknown>) => void) {}

  report(spent: Readonly<BudgetSpend>): void {
    this.last = { ...spent }
    this.pending ??= setImmediate(() => {
      this.pending = undefined
      if (this.last) this.send(spendValue(spendOf(this.last)))
    })
  }

  /** Sends what is pending now (the last report is never dropped), then stops. */
  stop(): void {
    if (!this.pending) return
    clearImmediate(this.pending)
    this.pending = undefined
    if (this.last) this.send(spendValue(spendOf(this.last)))
  }
}

function spendOf(spent: Readonly<BudgetSpend>) {
  return { tokens: spent.tokens, steps: spent.steps, toolCalls: spent.toolCalls, delegations: spent.children }
}

/** The whole tree's spend at the end: the last reported counts (never less than the run's own), with the run's usage. */
function finalSpend(result: RunResult, last: Readonly<BudgetSpend> | undefined): Record<string, unknown> {
  const { own, delegated } = result.work
  const usage = { inputTokens: result.usage.inputTokens, outputTokens: result.usage.outputTokens,
    ...result.usage.cachedInputTokens === undefined ? {} : { cachedInputTokens: result.usage.cachedInputTokens } }
  return spendValue({
    tokens: Math.max(last?.tokens ?? 0, usage.inputTokens + usage.outputTokens),
    steps: Math.max(last?.steps ?? 0, own.steps + delegated.steps),
    toolCalls: Math.max(last?.toolCalls ?? 0, own.toolCalls + delegated.toolCalls),
    delegations: Math.max(last?.children ?? 0, own.delegations + delegated.delegations),
    usage,
  })
}

function lowest(config: BudgetConfig | undefined, given: Crossing['budget']): BudgetLimits {
  const limits: BudgetLimits = {}
  for (const key of CROSSING_BUDGET_KEYS) {
    const values = [config?.[key], given?.[key]].filter((value): value is number => value !== undefined)
    if (values.length) limits[key] = Math.min(...values)
  }
  return limits
}

function textPart(text: string): Part {
  return { content: { $case: 'text', value: text }, mediaType: 'text/plain', filename: '', metadata: undefined }
}

/** The prompt: the text parts of the message (data and files are not read by this agent). */
function promptOf(message: Message): string {
  let text = ''
  for (const part of message.parts ?? []) {
    if (part.content?.$case === 'text' && typeof part.content.value === 'string') text += part.content.value
    if (text.length > MAX_PROMPT_CHARS) return text.slice(0, MAX_PROMPT_CHARS)
  }
  return text
}
