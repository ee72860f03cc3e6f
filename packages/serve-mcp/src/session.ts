import type { Context } from 'cordis'
import type { Server } from '@modelcontextprotocol/sdk/server/index.js'
import type { Agent, BudgetLimits } from '@cordis-subagents/agent'
import type { ToolResult, ToolView } from '@cordis-subagents/tools'
import { describeBreach, describeError, type ServedLimits, type ToolFilter } from '@cordis-subagents/shared'
import { serverSdk } from './sdk.js'

export interface SessionOptions {
  tools: readonly string[]
  model?: string
  persona?: string
  cwd?: string
  toolFilter?: ToolFilter
  maxConcurrentCalls: number
  /** This server's own depth ceiling and budget; a parent's (SUBAGENT_*) lower ones win. */
  maxDepth?: number
  budget?: BudgetLimits
}

/** Longest progress message sent to the client (characters). */
const MAX_PROGRESS_CHARS = 1024

/**
 * One MCP session: an SDK `Server` listing the served tools of `ctx.tools`, and a root agent (made
 * on the first call) that is the parent of every delegation the session starts. A tool call runs
 * the tool as that agent's; the client's cancel (`notifications/cancelled`) aborts the call, and
 * the delegation tool cancels its child. The root agent is a served agent of ctx.agents: held to the
 * parent's crossing (SUBAGENT_*) like serve-acp's sessions, so a call is refused when the session is
 * deeper than the ceiling, and each call is one tool call of its budget (refused once none is left).
 */
export class ServedSession {
  private agent?: Agent
  /** The served tools (a live view: it lists what the registry holds at each call), made once per session. */
  private servedView?: ToolView
  /** What the session's root agent is held to, read once per session (the host's crossing does not change under it). */
  private limits?: ServedLimits
  private running = 0
  private closed = false
  readonly server: Server

  private constructor(private readonly ctx: Context, private readonly options: SessionOptions, server: Server) {
    this.server = server
  }

  static async create(ctx: Context, options: SessionOptions): Promise<ServedSession> {
    const sdk = await serverSdk()
    const server = new sdk.Server({ name: 'cordis-subagents', version: '0.1.0' }, { capabilities: { tools: { listChanged: true } } })
    const session = new ServedSession(ctx, options, server)
    server.setRequestHandler(sdk.ListToolsRequestSchema, () => ({ tools: session.list() }))
    server.setRequestHandler(sdk.CallToolRequestSchema, (request, extra) => session.call(request.params, extra))
    return session
  }

  private served(): ToolView {
    return this.servedView ??= this.ctx.tools.view({ allow: [...this.options.tools] })
  }

  private servedLimits(): ServedLimits {
    const { maxDepth, budget } = this.options
    return this.limits ??= this.ctx.agents.servedLimits({ maxDepth, budget })
  }

  list() {
    return this.served().list().map((spec) => ({ name: spec.name, description: spec.description, inputSchema: spec.parameters as { type: 'object' } }))
  }

  /** Tells the client the served list changed (a delegation tool came or went with its provider). */
  toolsChanged() {
    if (!this.closed) this.server.sendToolListChanged().catch(() => {})
  }

  private async call(
    params: { name: string; arguments?: Record<string, unknown>; _meta?: { progressToken?: string | number } },
    extra: { signal: AbortSignal; requestId: string | number; sendNotification: (n: never) => Promise<void> },
  ) {
    if (this.running >= this.options.maxConcurrentCalls) {
      return textResult({ isError: true, content: `MCP_SERVE_BUSY: this session already runs ${this.running} calls (maxConcurrentCalls); wait for one to finish.` })
    }
    const refused = this.refusal()
    if (refused) return textResult({ isError: true, content: refused })
    this.running++
    try {
      const agent = this.rootAgent()
      const token = params._meta?.progressToken
      let progress = 0
      const call = { id: String(extra.requestId), name: params.name, input: params.arguments ?? {} }
      const result = await this.served().execute(call, {
        agent,
        signal: extra.signal,
        toolCallId: `mcp-${String(extra.requestId)}`,
        onUpdate: token === undefined ? undefined : (update) => {
          const message = (update.text ?? update.kind).slice(0, MAX_PROGRESS_CHARS)
          extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: ++progress, message } } as never).catch(() => {})
        },
      })
      return textResult(result)
    } catch (error) {
      return textResult({ isError: true, content: `The call failed: ${describeError(error)}` })
    } finally {
      this.running--
    }
  }

  /** Why this call may not run (the crossing's depth ceiling, the budget), or undefined; a call that may is charged. */
  private refusal(): string | undefined {
    const limits = this.servedLimits()
    if (limits.refusal) {
      const { depth, ceiling } = limits.refusal
      return `MCP_SERVE_DEPTH_EXCEEDED: this server runs at depth ${depth}, deeper than the ceiling ${ceiling} of its delegation tree; nothing is served.`
    }
    const spent = this.rootAgent().budget
    const breach = spent.exceeded() ?? spent.check('toolCalls') ?? spent.overtime()
    if (breach) return `MCP_SERVE_BUDGET: the delegation tree this server runs in has spent ${describeBreach(breach)}; no more calls are served.`
    spent.charge('toolCalls', 1)
    return undefined
  }

  private rootAgent(): Agent {
    this.agent ??= this.ctx.agents.createServed(this.servedLimits(), {
      label: 'mcp-client',
      model: this.options.model,
      persona: this.options.persona,
      cwd: this.options.cwd,
      tools: this.ctx.tools.view(this.options.toolFilter),
    })
    return this.agent
  }

  async close() {
    if (this.closed) return
    this.closed = true
    await this.server.close().catch(() => {})
    await this.agent?.dispose()
  }
}

function textResult(result: ToolResult) {
  return { content: [{ type: 'text' as const, text: result.content }], ...result.isError ? { isError: true } : {} }
}
