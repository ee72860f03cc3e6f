import type { Context, Logger } from 'cordis'
import type { Agent, AgentEvent, BudgetSpend, Message, RunOptions, RunResult } from '@cordis-subagents/agent'
import type { SentServers } from '@cordis-subagents/mcp'
import { crossingForFrom, describeError, questionMeta, SpendReporter, spendValue } from '@cordis-subagents/shared'
import type { ToolView } from '@cordis-subagents/tools'
import type { ClientLogs } from './client-logs.js'
import type { AcpTransport, Config } from './config.js'
import type { ServeAcpErrorCode } from './errors.js'
import { FlowControl, RequestCap, until } from './flow.js'
import { promptText } from './prompt-text.js'
import { initialized, type Sdk } from './sdk.js'
import { isSessionId, newSessionId, persistSession, SessionStore } from './session-store.js'
import { crossingKey, cwdProblem, noToolsLeft, promptTrace, quoted, sessionLimits, type SessionLimits } from './session-limits.js'
import { endSession, type Session, SessionTable } from './sessions.js'
import { tellClient } from './tell-client.js'
import { listSessions } from './session-list.js'
import { checkClientMcp, failuresMeta, opened } from './session-mcp.js'
import { acpStop, acpUsage, eventUpdate, replayed, reportOf, type Telemetry, totals } from './updates.js'

export interface ServerParts {
  ctx: Context
  config: Config
  sdk: Sdk
  logger: Logger
  /** What a client can make this server log (a foreign crossing at each initialize, the ACP SDK's console), under a budget. */
  logs: ClientLogs
  version: string
}

/**
 * One ACP agent connection: sessions with their own cwd and agent, one turn at a time per
 * session, cancel, load from the store, spend reports as the turn runs.
 */
export class AcpServer {
  private readonly sessions: SessionTable
  private readonly store?: SessionStore
  private connection?: ReturnType<ReturnType<Sdk['agent']>['connect']>
  private closing = false
  private closed?: Promise<void>
  private flow?: FlowControl
  private readonly requests: RequestCap

  constructor(private readonly parts: ServerParts, storeDir: string | undefined) {
    this.sessions = new SessionTable(parts.config.maxSessions)
    this.requests = new RequestCap(parts.config.maxRequestsInFlight, (message) => this.refuse('TOO_MANY_REQUESTS', message, 'invalidRequest'))
    if (parts.config.loadSession && storeDir) {
      this.store = new SessionStore(storeDir, { maxBytes: parts.config.maxSessionBytes, maxSessions: parts.config.maxStoredSessions })
    }
  }

  /** Serves on `transport` (FlowControl; `keep`: stdio, let go of at the close, never ended); resolves when the client goes away. */
  serve(transport: AcpTransport, keep = false): Promise<void> {
    const flow = this.flow = new FlowControl(transport, { keep })
    this.connection = this.app().connect(this.parts.sdk.ndJsonStream(flow.output, flow.input))
    return this.connection.closed.catch(() => {})
  }

  /**
   * Aborts every turn; once the requests in hand are answered (prompts `cancelled`) and written, or closeGrace passed, closes
   * the connection, ends the output (FlowControl.end) and disposes every session's agent. Every call returns the one close.
   */
  close(): Promise<void> {
    return this.closed ??= (async () => {
      this.closing = true
      const deadline = performance.now() + this.parts.config.closeGrace
      const all = this.sessions.drain()
      this.sessions.wakeWaiting()
      for (const session of all) session.controller?.abort(new Error('the ACP server is shutting down'))
      await until(this.requests.idle(), deadline)
      await this.flow?.quiet(deadline)
      try {
        this.connection?.close()
      } catch {}
      await Promise.allSettled([...all.map(endSession), this.flow?.end(deadline)])
    })()
  }

  /** After `close`: settles once the transport is let go of (FlowControl.end), without waiting for the agents' disposal. */
  readonly released = (): Promise<void> => this.flow?.released ?? Promise.resolve()

  private app() {
    const { sdk, config } = this.parts
    const methods = sdk.methods
    // Every request counts against maxRequestsInFlight while it is handled (TOO_MANY_REQUESTS past it).
    const capped = this.requests.capped.bind(this.requests)
    return sdk.agent({ name: config.name })
      .onRequest(methods.agent.initialize, capped(async ({ params }) => {
        // The parent that started us names the env's tool ceiling as ours: only now does it apply.
        this.bindCrossing(params._meta)
        return initialized(params.protocolVersion, config, this.parts.version, !!this.store)
      }))
      .onRequest(methods.agent.session.new, capped(async ({ params }) => {
        const cwd = await this.sessionCwd(params.cwd)
        const limits = this.limitsOf(params._meta)
        const open = (mcp?: SentServers) => this.open(newSessionId(), cwd, params._meta, limits, undefined, mcp)
        const session = await this.openInSlot(params.mcpServers, cwd, open)
        // Stored at once, so a session whose first turn never finished can still be loaded.
        await this.persist(session)
        return { sessionId: session.id, ...failuresMeta(session.mcp) }
      }))
      .onRequest(methods.agent.session.load, capped(async ({ params, client }) => {
        const session = await this.reopen(params, 'session/load')
        const mcpMeta = failuresMeta(session.mcp)
        // The protocol wants the conversation replayed to the client before the response.
        for (const message of session.agent.transcript.messages) {
          const update = replayed(message)
          if (update) await client.notify(methods.client.session.update, { sessionId: session.id, update: update as any }).catch(() => {})
        }
        return mcpMeta
      }))
      // session/load without the replay: the client still shows the conversation.
      .onRequest(methods.agent.session.resume, capped(async ({ params }) => {
        const session = await this.reopen(params, 'session/resume')
        return failuresMeta(session.mcp)
      }))
      .onRequest(methods.agent.session.list, capped(async ({ params }) => {
        const page = await listSessions(this.sessions.values(), this.store, params)
        if (!page) throw this.refuse('INVALID_CURSOR', 'the cursor is not one this server gave; list again without a cursor')
        return page
      }))
      .onRequest(methods.agent.session.close, capped(async ({ params }) => {
        // A close sent during a load of the session waits for it and closes what it opened (SessionTable.take).
        const session = await this.sessions.take(params.sessionId)
        if (!session) throw this.refuse('UNKNOWN_SESSION', `unknown session ${quoted(params.sessionId)}; it is not open here`)
        // Closing ends a running turn (its prompt answers cancelled) and frees the session; the stored copy stays loadable.
        session.controller?.abort(new Error('the session was closed by the client (session/close)'))
        await endSession(session)
        return {}
      }))
      .onNotification(methods.agent.session.cancel, ({ params }) => {
        this.sessions.get(params.sessionId)?.controller?.abort(new Error('cancelled by the client (session/cancel)'))
      })
      .onRequest(methods.agent.session.prompt, capped(async ({ params, client }) => {
        const session = this.sessions.get(params.sessionId)
        if (!session) throw this.refuse('UNKNOWN_SESSION', `unknown session ${quoted(params.sessionId)}; create one with session/new or load it`)
        // One turn at a time: a second prompt must not take over the running turn's cancel.
        if (session.controller) throw this.refuse('TURN_RUNNING', 'a turn is already running in this session; wait for it or send session/cancel', 'invalidRequest')
        const text = promptText(params.prompt, config.maxPromptChars)
        if (typeof text !== 'string') {
          throw this.refuse('PROMPT_TOO_LARGE', `the prompt has more than ${config.maxPromptChars} characters (maxPromptChars); send a shorter one`)
        }
        this.rebase(session, params._meta)
        this.checkTools(session)
        const notify = (update: Record<string, unknown>) =>
          client.notify(methods.client.session.update, { sessionId: session.id, update: update as any }).catch(() => {})
        return this.turn(session, text, params._meta, notify)
      }))
  }

  /** session/load and session/resume: the session's history (open here or stored) under a new agent with this request's limits. */
  private async reopen(
    params: { sessionId: string; cwd: string; mcpServers?: unknown; _meta?: unknown }, method: 'session/load' | 'session/resume',
  ): Promise<Session> {
    if (!this.store) throw this.refuse('LOAD_UNSUPPORTED', `this server does not load sessions (loadSession is off), so it does not answer ${method}`, 'invalidRequest')
    const id = params.sessionId
    if (!isSessionId(id)) throw this.refuse('UNKNOWN_SESSION', `cannot load session ${quoted(id)}: not a session id of this server`)
    // One load at a time per session, claimed before the first await: two at once would each make an agent under the id,
    // the first one lost to every close.
    if (!this.sessions.startLoad(id)) throw this.refuse('TURN_RUNNING', `session ${id} is being loaded by another request; wait for it`, 'invalidRequest')
    try {
      const cwd = await this.sessionCwd(params.cwd)
      // Refused before the open session of this id is closed for the load.
      const limits = this.limitsOf(params._meta)
      const messages = await this.history(id)
      const session = await this.openInSlot(params.mcpServers, cwd, (mcp) => this.open(id, cwd, params._meta, limits, messages, mcp))
      await this.persist(session)
      return session
    } finally {
      this.sessions.loaded(id)
    }
  }

  /**
   * Opens a session in a slot taken (SessionTable.reserve: the idle sessions closed for it reaped first, openings past
   * maxSessions waiting for one to end) before its client's MCP servers start: live and opening sessions never run more
   * than maxSessions × mcpServers.maxServers of them. A list the policy forbids is refused first (MCP_SERVER_REFUSED).
   */
  private async openInSlot(sent: unknown, cwd: string, open: (mcp?: SentServers) => Session): Promise<Session> {
    const { config, logger } = this.parts
    const mcp = await checkClientMcp(sent, config.mcpServers, cwd, logger)
    if ('refusal' in mcp) throw this.refuse('MCP_SERVER_REFUSED', `${mcp.refusal}; nothing was started (see serve-acp's mcpServers config)`)
    const busy = `all ${config.maxSessions} sessions (maxSessions) are running a turn or waiting for an answer; wait for one to end`
    if (!await this.sessions.reserve(() => this.closing)) throw this.refuse('TOO_MANY_SESSIONS', busy, 'invalidRequest')
    try {
      const servers = await mcp.start()
      // Servers of a session that does not open (the server closing) are stopped before the slot is given back.
      return await opened(() => open(servers), servers)
    } finally {
      this.sessions.release()
    }
  }

  private async turn(session: Session, text: string, meta: unknown, notify: (update: Record<string, unknown>) => Promise<unknown>) {
    const { sdk, ctx, config } = this.parts
    const controller = new AbortController()
    session.controller = controller
    const pending: Promise<unknown>[] = []
    let context = 0
    const base = { ...session.spent }
    // Cumulative over the session (since it was opened or loaded here), like ACP's own usage.
    const reporter = new SpendReporter((spent: BudgetSpend) => notify({
      sessionUpdate: 'usage_update',
      used: context,
      size: config.contextWindow ?? 0,
      _meta: { cordisSubagents: spendValue(reportOf(base, spent, session.agent)) },
    }))
    try {
      // In the try: a tracer that throws fails this prompt, and the session is not left running a turn (TURN_RUNNING for good).
      const telemetry = ctx.get('telemetry') as Telemetry | undefined
      telemetry?.continueTrace(session.agent, promptTrace(meta) ?? session.trace)
      const options = {
        signal: controller.signal,
        onSpend: reporter.charge,
        onEvent: (event: AgentEvent) => {
          if (event.type === 'step-end' && event.usage) context = event.usage.inputTokens + event.usage.outputTokens
          const update = eventUpdate(event)
          if (update) pending.push(notify(update))
        },
      }
      // A session whose last turn parked on a question takes this prompt as the answer.
      const result = session.agent.parked ? await this.answer(session, text, options) : await session.agent.run(text, options)
      // The question is the turn's message, so a client that does not read `_meta` (a person in Zed) sees it too.
      if (result.stopReason === 'pending' && result.question) pending.push(notify({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: result.question.text } }))
      await Promise.all(pending)
      await reporter.finish()
      const last = reporter.last
      if (last) session.spent = totals(base, last)
      const parked = result.stopReason === 'pending' && result.question
      const stopReason = parked ? 'end_turn' : acpStop(result.stopReason)
      // A failed turn (error, max-steps, timeout, budget) is a JSON-RPC error, so the parent sees an `error` result with the diagnostic.
      if (!stopReason) {
        const why = result.diagnostic || `the agent's turn ended with ${result.stopReason}`
        throw sdk.RequestError.internalError({ code: 'TURN_FAILED' satisfies ServeAcpErrorCode, stopReason: result.stopReason }, why)
      }
      const usage = acpUsage(session.agent)
      // Parked: the turn ends with the question in `_meta.cordisSubagents.question` (the crossing); the next prompt answers it.
      return (parked ? { stopReason, usage, _meta: questionMeta(parked) } : { stopReason, usage }) as any
    } finally {
      session.controller = undefined
      session.updatedAt = Date.now()
      await this.persist(session)
    }
  }

  /** `agent.resume(answer)`; an answer the agent refuses is a JSON-RPC error, and the session stays parked. */
  private async answer(session: Session, text: string, options: RunOptions): Promise<RunResult> {
    try {
      return await session.agent.resume(text, options)
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'INVALID_PROMPT') throw error
      throw this.refuse('INVALID_ANSWER', `the session is waiting for an answer to its question, and this prompt is not one: ${describeError(error)}`)
    }
  }

  /** Opens (or re-opens) a session in the slot its request holds (openInSlot): creates its agent. */
  private open(id: string, cwd: string, meta: unknown, limits: SessionLimits, seed?: readonly Message[], mcp?: SentServers): Session {
    // Closed while the request started its client's MCP servers: no session opens (`opened` stops those servers).
    if (this.closing) throw new Error('the ACP server is shutting down; no session opens now')
    const agent = this.servedAgent(id, limits, cwd, seed, mcp)
    const spent = { steps: 0, tokens: 0, toolCalls: 0, delegations: 0 }
    const session: Session = { id, agent, cwd, depth: limits.depth, updatedAt: Date.now(), spent, crossing: crossingKey(meta) }
    if (mcp) session.mcp = mcp
    if (limits.trace) session.trace = limits.trace
    this.sessions.add(session)
    return session
  }

  // A prompt's crossing other than its session's (a session a pooled client opened ahead): the session goes on under
  // it, with its history and MCP servers, in a new agent. A parked session keeps its agent (the prompt is its answer).
  private rebase(session: Session, meta: unknown): void {
    const crossing = crossingKey(meta)
    if (crossing === undefined || crossing === session.crossing || session.agent.parked) return
    const limits = this.limitsOf(meta)
    const old = session.agent
    session.agent = this.servedAgent(session.id, limits, session.cwd, old.transcript.completedMessages(), session.mcp)
    session.depth = limits.depth
    session.crossing = crossing
    void old.dispose()
  }

  /** A session's limits from its `_meta`; a depth past the ceiling is refused. */
  private limitsOf(meta: unknown): SessionLimits {
    const { ctx, config } = this.parts
    // The process's crossing is ctx.agents' (read once; it applies its budget, and its tool ceiling once `initialize` binds it).
    const limits = sessionLimits(meta, ctx.agents.rootCrossing, ctx.agents.rootDepth, config)
    if (limits.refusal) {
      const { depth, ceiling } = limits.refusal
      throw this.refuse('DEPTH_EXCEEDED', `depth ${depth} is deeper than this server allows (ceiling ${ceiling}); delegate from a shallower agent or raise maxDepth`, 'invalidRequest', { depth, ceiling })
    }
    return limits
  }

  /** The session's agent: this server's tools (and the client's MCP servers' as its own; `tell_parent` when its crossing asks). */
  private servedAgent(id: string, limits: SessionLimits, cwd: string, seed?: readonly Message[], mcp?: SentServers): Agent {
    const { model, persona } = this.parts.config
    const tell = tellClient(() => this.closing ? undefined : this.connection?.client, id)
    return this.parts.ctx.agents.createServed(limits, { label: 'acp', cwd, tools: this.tools(), ownTools: mcp?.tools, model, persona, seed, tell })
  }

  /** The history to load: an open session's completed turns (closing it), else the stored ones. */
  private async history(id: string): Promise<readonly Message[]> {
    const open = this.sessions.get(id)
    if (open) {
      // Loading a session this process has open (a client that keeps the process, e.g. provider-acp's
      // reuse) continues it with the limits of the new `_meta`: the same history, a new agent.
      if (open.controller) throw this.refuse('TURN_RUNNING', `session ${id} is running a turn; wait for it or cancel it`, 'invalidRequest')
      const messages = open.agent.transcript.completedMessages()
      this.sessions.delete(id)
      await endSession(open)
      return messages
    }
    let stored
    try {
      stored = await this.store!.load(id)
    } catch (error) {
      throw this.parts.sdk.RequestError.internalError(undefined, `session ${id} cannot be loaded: ${describeError(error)}`)
    }
    if (!stored) throw this.refuse('SESSION_NOT_STORED', `session ${id} is not in the store (${this.store!.dir}); it may have been pruned (maxStoredSessions)`)
    return stored.messages
  }

  private bindCrossing(meta: unknown): void {
    const nonce = crossingForFrom(meta)
    if (nonce !== undefined && !this.parts.ctx.agents.bindCrossing(nonce)) this.parts.logs.foreignCrossing()
  }

  /** A session whose parent's tool ceiling leaves none of the served tools is refused (noToolsLeft), not answered from the model alone. */
  private checkTools(session: Session): void {
    const problem = noToolsLeft(session.agent.tools, this.tools())
    if (problem) throw this.refuse('NO_TOOLS_LEFT', problem, 'invalidRequest')
  }

  /** ctx.tools under the configured filter (ctx.agents adds the session's `_meta` ceiling and the env one). */
  private tools(): ToolView {
    const { ctx, config } = this.parts
    return config.tools ? ctx.tools.view(config.tools) : ctx.tools.view()
  }

  private readonly persist = (session: Session) => persistSession(this.store, session, this.parts.logger)

  private async sessionCwd(cwd: unknown): Promise<string> {
    const problem = await cwdProblem(cwd)
    if (problem) throw this.refuse('INVALID_CWD', problem)
    return cwd as string
  }

  private refuse(code: ServeAcpErrorCode, message: string, kind: 'invalidParams' | 'invalidRequest' = 'invalidParams', extra: Record<string, unknown> = {}) {
    return this.parts.sdk.RequestError[kind]({ code, ...extra }, message)
  }
}
