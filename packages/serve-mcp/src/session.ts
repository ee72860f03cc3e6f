import type { Context } from 'cordis'
import type { Server } from '@modelcontextprotocol/sdk/server/index.js'
import type { Agent, AgentRuntime, BudgetLimits } from '@cordis-subagents/agent'
import type { ToolResult, ToolView } from '@cordis-subagents/tools'
import { describeBreach, describeError, lowestLimits, type ServedLimits, type ToolFilter, withoutCallerTracing } from '@cordis-subagents/shared'
import { ParentBudget } from './parent-budget.js'
import { progressLine } from './progress.js'
import { serverSdk } from './sdk.js'
import { SessionTasks, type TaskBounds } from './tasks.js'

/** Longest wait of a session's close for its calls in flight to end (ms). */
const CLOSE_GRACE_MS = 8_000

/** Whether served tools run as MCP tasks (the tools' `execution.taskSupport`). */
type TaskSupport = 'optional' | 'required' | 'forbidden'

export interface SessionOptions {
  tools: readonly string[]
  model?: string
  persona?: string
  cwd?: string
  toolFilter?: ToolFilter
  maxConcurrentCalls: number
  /** This server's own depth ceiling and budget; a parent's (SUBAGENT_*) lower ones win. */
  maxDepth?: number
  /** The limits of each call's root run (a parent's remaining budget lowers them). */
  budget?: BudgetLimits
  /** MCP tasks: whether a call may (`optional`), must (`required`) or may not (`forbidden`) ask for one, and their bounds. */
  taskSupport: TaskSupport
  tasks: TaskBounds
}

interface CallParams {
  name: string
  arguments?: Record<string, unknown>
  task?: { ttl?: number }
  _meta?: { progressToken?: string | number }
}
type CallExtra = { signal: AbortSignal; requestId: string | number; sendNotification: (n: never) => Promise<void> }

/**
 * One MCP session: an SDK `Server` listing the served tools of `ctx.tools`. Each tool call is a root
 * run of its own: a served agent of ctx.agents made for the call (the parent of the delegations it
 * starts, with a fresh budget) and disposed when the call ends, so call 17 of a session has the same
 * budget as call 1. The client's cancel (`notifications/cancelled`) aborts the call, and the delegation
 * tool cancels its child. Held to the parent's crossing (SUBAGENT_*) like serve-acp's sessions: a call is
 * refused when the host is deeper than the ceiling, and each call is one tool call of its own budget.
 */
export class ServedSession {
  /** The root agents of the calls running now (disposed as each call ends, the rest at close). */
  private readonly agents = new Set<Agent>()
  /** The calls running now, each settled once its agent is disposed: `close()` waits for them (CLOSE_GRACE_MS). */
  private readonly calls = new Set<Promise<ToolResult>>()
  /**
   * `ctx.agents` itself, resolved once per session: every access through `ctx` (cordis' caller tracing) builds an
   * `Error` for its inject check and a shadow context per method call, which cost about a fifth of a served call.
   * McpServe injects `agents` and `tools`, so a change of either restarts the service and its sessions.
   */
  private readonly runtime: AgentRuntime
  /** The served tools (a live view: it lists what the registry holds at each call), made once per session. */
  private readonly servedView: ToolView
  /** The tools of each call's root agent (`toolFilter`; a live view as well), made once per session. */
  private readonly callTools: ToolView
  /** A parent's remaining budget (SUBAGENT_BUDGET), spent by the session's calls one after another (its clock starts at the first call). */
  private parentBudget?: ParentBudget
  private running = 0
  private closed = false
  readonly server: Server

  private constructor(
    ctx: Context,
    private readonly options: SessionOptions,
    server: Server,
    private readonly tasks?: SessionTasks,
  ) {
    this.server = server
    this.runtime = withoutCallerTracing(ctx.agents)
    const tools = withoutCallerTracing(ctx.tools)
    this.servedView = tools.view({ allow: [...options.tools] })
    this.callTools = tools.view(options.toolFilter)
  }

  static async create(ctx: Context, options: SessionOptions): Promise<ServedSession> {
    const sdk = await serverSdk()
    const tasks = options.taskSupport === 'forbidden' ? undefined : new SessionTasks(options.tasks)
    const server = new sdk.Server({ name: 'cordis-subagents', version: '0.1.0' }, {
      capabilities: {
        tools: { listChanged: true },
        ...tasks ? { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } } : {},
      },
      taskStore: tasks,
    })
    const session = new ServedSession(ctx, options, server, tasks)
    server.setRequestHandler(sdk.ListToolsRequestSchema, () => ({ tools: session.list() }))
    server.setRequestHandler(sdk.CallToolRequestSchema, (request, extra) => session.call(request.params, extra))
    return session
  }

  /** What the next call's root run is held to: the configured budget under what the parent's budget has left. */
  private servedLimits(): ServedLimits {
    const { maxDepth, budget } = this.options
    this.parentBudget ??= new ParentBudget(this.runtime.rootCrossing.budget)
    const left = this.parentBudget.remaining()
    return this.runtime.servedLimits({ maxDepth, budget: left ? lowestLimits<BudgetLimits>(budget, left) : budget })
  }

  list() {
    const execution = this.tasks ? { execution: { taskSupport: this.options.taskSupport } } : {}
    return this.servedView.list().map((spec) => ({ name: spec.name, description: spec.description, inputSchema: spec.parameters as { type: 'object' }, ...execution }))
  }

  /** This session's tasks still working (0 without tasks). */
  get workingTasks(): number {
    return this.tasks?.working ?? 0
  }

  /** Tells the client the served list changed (a delegation tool came or went with its provider). */
  toolsChanged() {
    if (!this.closed) this.server.sendToolListChanged().catch(() => {})
  }

  private async call(params: CallParams, extra: CallExtra) {
    if (params.task && this.tasks) return this.startTask(this.tasks, params)
    if (this.options.taskSupport === 'required') {
      return textResult({ isError: true, content: 'MCP_SERVE_TASK_REQUIRED: this server runs its tools as MCP tasks only; call again with params.task (MCP 2025-11-25 tasks).' })
    }
    const token = params._meta?.progressToken
    let progress = 0
    const result = await this.run(params, String(extra.requestId), extra.signal, token === undefined ? undefined : (message) => {
      extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: ++progress, message } } as never).catch(() => {})
    })
    return textResult(result)
  }

  /**
   * A task-augmented call: the task is created (or refused with a JSON-RPC error when the session holds
   * `maxTasks`), the call runs in the background under the task's own abort signal, each progress line
   * becomes the task's `statusMessage`, and its result is stored for `tasks/result` (an error result as
   * `failed`). The client reads it with `tasks/get` / `tasks/result`, or cancels it with `tasks/cancel`.
   */
  private async startTask(tasks: SessionTasks, params: CallParams) {
    const task = await tasks.createTask({ ttl: params.task?.ttl })
    const signal = tasks.signal(task.taskId)!
    void this.run(params, `task-${task.taskId}`, signal, (line) => tasks.progress(task.taskId, line))
      .then((result) => tasks.storeTaskResult(task.taskId, result.isError ? 'failed' : 'completed', textResult(result)))
    return { task }
  }

  /** Runs one served call, counted in `calls` until it settled. */
  private run(params: CallParams, id: string, signal: AbortSignal, onProgress?: (line: string) => void): Promise<ToolResult> {
    const call = this.runCall(params, id, signal, onProgress)
    this.calls.add(call)
    void call.finally(() => this.calls.delete(call))
    return call
  }

  /** Runs one served call under its own root agent; a refusal (busy, too deep, no budget left) is an error result. */
  private async runCall(params: CallParams, id: string, signal: AbortSignal, onProgress?: (line: string) => void): Promise<ToolResult> {
    if (this.running >= this.options.maxConcurrentCalls) {
      return { isError: true, content: `MCP_SERVE_BUSY: this session already runs ${this.running} calls (maxConcurrentCalls); wait for one to finish.` }
    }
    const limits = this.servedLimits()
    if (limits.refusal) {
      const { depth, ceiling } = limits.refusal
      return { isError: true, content: `MCP_SERVE_DEPTH_EXCEEDED: this server runs at depth ${depth}, deeper than the ceiling ${ceiling} of its delegation tree; nothing is served.` }
    }
    const spent = this.parentBudget!.breach()
    if (spent) return { isError: true, content: `MCP_SERVE_BUDGET: the delegation tree this server runs in has spent ${describeBreach(spent)}; no more calls are served.` }
    let agent: Agent
    try {
      agent = this.callAgent(limits)
    } catch (error) {
      // Nothing was taken yet: the call fails alone, the session serves on.
      return { isError: true, content: `The call failed: ${describeError(error)}` }
    }
    this.running++
    try {
      const refused = budgetRefusal(agent)
      if (refused) return { isError: true, content: refused }
      const call = { id, name: params.name, input: params.arguments ?? {} }
      return await this.servedView.execute(call, {
        agent,
        signal,
        toolCallId: `mcp-${id}`,
        onUpdate: onProgress && ((update) => onProgress(progressLine(update))),
      })
    } catch (error) {
      return { isError: true, content: `The call failed: ${describeError(error)}` }
    } finally {
      this.running--
      this.agents.delete(agent)
      this.parentBudget!.add(agent.budget.spent)
      await agent.dispose().catch(() => {})
    }
  }

  /** The root agent of one call: its own root run and budget (the configured `budget` under the parent's). */
  private callAgent(limits: ServedLimits): Agent {
    const agent = this.runtime.createServed(limits, {
      label: 'mcp-client',
      model: this.options.model,
      persona: this.options.persona,
      cwd: this.options.cwd,
      tools: this.callTools,
    })
    this.agents.add(agent)
    return agent
  }

  async close() {
    if (this.closed) return
    this.closed = true
    this.tasks?.close()
    // The server's close aborts the calls in flight (so does the tasks' close): each disposes its agent, whose delegations
    // cancel their children. Waited for, at most CLOSE_GRACE_MS: the bin exits only after them (holdExit).
    await this.server.close().catch(() => {})
    const ending = Promise.all([...this.calls, ...[...this.agents].map((agent) => agent.dispose().catch(() => {}))])
    let timer: NodeJS.Timeout | undefined
    await Promise.race([ending, new Promise((resolve) => { timer = setTimeout(resolve, CLOSE_GRACE_MS) })])
    clearTimeout(timer)
  }
}

/** Why a call's root run may not run its call (a budget that allows no tool call), or undefined; else it is charged one tool call. */
function budgetRefusal(agent: Agent): string | undefined {
  const spent = agent.budget
  const breach = spent.exceeded() ?? spent.check('toolCalls') ?? spent.overtime()
  if (breach) return `MCP_SERVE_BUDGET: a call's root run here may not spend ${describeBreach(breach)}; nothing is served.`
  spent.charge('toolCalls', 1)
  return undefined
}

function textResult(result: ToolResult) {
  return { content: [{ type: 'text' as const, text: result.content }], ...result.isError ? { isError: true } : {} }
}
