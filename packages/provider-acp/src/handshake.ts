import { Readable } from 'node:stream'
import type * as Acp from '@agentclientprotocol/sdk'
import { CROSSING_ENV, CROSSING_KEY, crossingForMeta, onAbort, TELL_METHOD, type TellRefusal } from '@cordis-subagents/shared'
import { capDiagnostic } from '@cordis-subagents/subagents-service'
import { raceTimeout } from './agent-streams.js'
import { AcpError } from './errors.js'
import { describeExit, type AgentProcess, type ExitInfo } from './process.js'
import {
  agentError, agentText, CLIENT_INFO, describeRequestError, isAuthError, MAX_MESSAGE_BYTES, PROTOCOL_VERSION,
  UNSUPPORTED_VERSION_CODE, type Sdk,
} from './sdk.js'
import type { RunSettings } from './settings.js'

/** Where a run is: the handshake steps, then the one prompt turn. */
export type Stage = 'spawn' | 'initialize' | 'session/new' | 'session/load' | 'session/resume' | 'session/fork' | 'prompt'

/** How long to wait for an exit status after the connection dropped. */
export const EXIT_STATUS_MS = 400

export interface HandshakeHooks {
  /** Answers the agent's permission requests (they may come as soon as the session exists). */
  answerPermission(params: Acp.RequestPermissionRequest): Acp.RequestPermissionResponse | Promise<Acp.RequestPermissionResponse>
  /** Answers the agent's form elicitations (`permission: escalate` only advertises them). */
  answerElicitation(params: Acp.CreateElicitationRequest): Acp.CreateElicitationResponse | Promise<Acp.CreateElicitationResponse>
  /** A served child's `tell_parent` message (`_cordisSubagents/tell`); undefined: no run offered the tool, so it is not ours to take. */
  tell(sessionId: unknown, message: unknown): { sent: number; of: number } | TellRefusal | undefined
  /** Once the stream was cut (maxStreamBytes, the input backlog): the startup failure at `stage` that names the bound. */
  overflowError(stage: Stage, cause?: unknown): AcpError | undefined
  /** The scrubbed stderr tail section for a diagnostic ('' when there is none). */
  stderrSection(): string
}

/**
 * The connection to one agent: `initialize` (protocol version 1) → `session/new`, bounded by
 * startupTimeout, the request signal and the process' exit, with every failure turned into an
 * `AcpError` that says what to do.
 */
export class Handshake {
  stage: Stage = 'spawn'
  connection?: Acp.ClientConnection
  session?: Acp.ActiveSession
  private authMethods: Acp.AuthMethod[] = []
  /** The agent advertised `loadSession` in its initialize answer. */
  canLoadSession = false
  /** The agent advertised `sessionCapabilities.resume` (continue a session without the replay). */
  canResumeSession = false
  /** The agent advertised `sessionCapabilities.close` (free a session it keeps). */
  canCloseSession = false
  /** The agent advertised `sessionCapabilities.fork` (a new session that starts with an earlier one's history). */
  canForkSession = false
  /** The agent's name from its initialize answer (`agentInfo.name`), when it gave a short one. */
  agentName?: string
  /** A session a spare opened ahead of need (`openAhead`), and what it was opened with. */
  private ahead?: { key: string; exact: string; session: Acp.ActiveSession }

  constructor(
    private readonly sdk: Sdk,
    private readonly settings: RunSettings,
    private readonly proc: AgentProcess,
    private readonly hooks: HandshakeHooks,
  ) {}

  /** initialize → session/new; rejects with an `AcpError` on failure, timeout, abort or exit. */
  async open(signal: AbortSignal): Promise<void> {
    await this.connect(signal)
    await this.startSession(signal, this.settings)
  }

  /** `initialize` only (a spare process stops here until a run needs it). */
  connect(signal: AbortSignal): Promise<void> {
    return this.bounded(signal, () => this.initialize())
  }

  /** `session/new` on an initialized connection, with the run's cwd and `_meta`. */
  startSession(signal: AbortSignal, session: Pick<RunSettings, 'cwd' | 'mcpServers' | 'sessionMeta'>): Promise<void> {
    this.session = undefined
    return this.bounded(signal, () => this.newSession(session))
  }

  /**
   * `session/new` ahead of need, on a spare: with the settings of the latest run (its cwd, MCP
   * servers and `_meta`), so a run that asks for the same (`takeAhead`) has its session at once.
   * Best effort: when it fails, the run sends its own (a process that died is the pool's to see).
   */
  async openAhead(signal: AbortSignal, session: Pick<RunSettings, 'cwd' | 'mcpServers' | 'sessionMeta'>): Promise<void> {
    try {
      await this.startSession(signal, session)
      this.ahead = { key: sessionKey(session, 'lasting'), exact: sessionKey(session, 'exact'), session: this.session! }
    } catch {
      // the run opens its own session
    }
    this.session = undefined
  }

  /**
   * The session opened ahead, when it was opened with the run's cwd, MCP servers and the lasting
   * part of its `_meta` (depth, depth ceiling, tool ceiling); else it is dropped and the run sends
   * its own `session/new`. What changes from run to run (the remaining budget, the trace context)
   * does not keep a run from it: `'adopted'` says they differ, and the run then sends its
   * `_meta` with its prompts (see `openSession`). False when the run did not get it.
   */
  takeAhead(session: Pick<RunSettings, 'cwd' | 'mcpServers' | 'sessionMeta'>): 'exact' | 'adopted' | false {
    const ahead = this.ahead
    this.ahead = undefined
    if (!ahead) return false
    if (ahead.key !== sessionKey(session, 'lasting')) {
      try {
        ahead.session.dispose()
      } catch {
        // best effort: the agent keeps an idle session it never hears of again
      }
      return false
    }
    this.session = ahead.session
    this.stage = 'session/new'
    return ahead.exact === sessionKey(session, 'exact') ? 'exact' : 'adopted'
  }

  /** The agent can continue an earlier session: `session/resume` or `session/load`. */
  get canContinue(): boolean {
    return this.canResumeSession || this.canLoadSession
  }

  /**
   * `session/resume` of an earlier session when the agent offers it, else `session/load` (the
   * agent replays its history, which is not this run's output). Sent even when this connection
   * has the session open, so the agent gets this delegation's `_meta` (its limits).
   */
  resumeSession(signal: AbortSignal, session: Pick<RunSettings, 'cwd' | 'mcpServers' | 'sessionMeta'>, sessionId: string): Promise<void> {
    return this.attach(signal, this.canResumeSession ? 'session/resume' : 'session/load', session, sessionId)
  }

  /** `session/fork` of `sessionId` (advertised as `sessionCapabilities.fork`): a new session that starts with its history. */
  forkSession(signal: AbortSignal, session: Pick<RunSettings, 'cwd' | 'mcpServers' | 'sessionMeta'>, sessionId: string): Promise<void> {
    return this.attach(signal, 'session/fork', session, sessionId)
  }

  private attach(
    signal: AbortSignal, method: 'session/resume' | 'session/load' | 'session/fork', session: Pick<RunSettings, 'cwd' | 'mcpServers' | 'sessionMeta'>,
    sessionId: string,
  ): Promise<void> {
    this.session = undefined
    return this.bounded(signal, async () => {
      this.stage = method
      const agent = this.connection!.agent as unknown as { attachSession?: (response: { sessionId: string }) => Acp.ActiveSession }
      // The SDK builds its session helper only around session/new; its (internal) attach does the same for a loaded one.
      if (typeof agent.attachSession !== 'function') throw new AcpError('ACP_STARTUP_FAILED', 'This ACP SDK cannot attach to a loaded session.')
      const request: Acp.LoadSessionRequest = { sessionId, cwd: session.cwd, mcpServers: session.mcpServers }
      if (session.sessionMeta) request._meta = session.sessionMeta
      // session/fork is in the SDK's unstable schema only: sent by name, its answer read as the new session's id.
      const answer = await this.connection!.agent.request<{ sessionId?: unknown } | null>(method, request)
      const opened = method === 'session/fork' ? answer?.sessionId : sessionId
      if (typeof opened !== 'string' || !opened || opened.length > 256) throw new Error(`the agent answered ${method} without a usable sessionId`)
      this.session = agent.attachSession.call(this.connection!.agent, { sessionId: opened })
    })
  }

  /**
   * `session/close` of a session this run is done with, on a process kept for another run; bounded
   * by `ms`. Rejects when the agent refuses or does not answer in time.
   */
  async closeSession(sessionId: string, ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer to session/close within ${ms} ms`)), ms)
    })
    try {
      await Promise.race([this.connection!.agent.request(this.sdk.methods.agent.session.close, { sessionId }), late])
    } finally {
      clearTimeout(timer)
    }
  }

  /** `work` bounded by startupTimeout, the signal and the process' exit. */
  private async bounded(signal: AbortSignal, work: () => Promise<void>): Promise<void> {
    const { settings } = this
    let timer: NodeJS.Timeout | undefined
    let stopWaiting = () => {}
    let done = false
    const failure = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new AcpError('ACP_STARTUP_TIMEOUT',
        `The ACP agent "${settings.command}" did not finish ${this.stage} within startupTimeout (${settings.startupTimeout} ms); `
        + `it was stopped. Check that the command starts an ACP agent on stdio, or raise startupTimeout.${this.hooks.stderrSection()}`)),
      settings.startupTimeout)
      // One listener on a pool's stop signal however many spares start at once (no MaxListenersExceededWarning).
      stopWaiting = onAbort(signal, () => reject(aborted(`during ${this.stage}`)))
      // One reaction per step on the exit (a pooled process gets one per session, bounded by maxSessionsPerProcess).
      this.proc.settledExit.then((exit) => { if (!done) reject(this.exitedDuringStartup(exit)) })
    })
    failure.catch(() => {})
    try {
      await Promise.race([work(), failure])
    } catch (error) {
      throw await this.startupError(error)
    } finally {
      done = true
      clearTimeout(timer)
      stopWaiting()
    }
  }

  /** "ACP_AUTH_REQUIRED" guidance for an auth error at the current stage, naming the offered auth methods. */
  authGuidance(error: Acp.RequestError): string {
    const methods = this.authMethods
      .map((method) => agentText(`"${method.id}"${method.name && method.name !== method.id ? ` (${method.name})` : ''}`))
    const when = this.stage === 'prompt' ? 'answered session/prompt with' : `answered ${this.stage} with`
    // Only what the agent sent is scrubbed: our own advice names variables, and must stay readable.
    const { redactor } = this.settings
    return `The ACP agent "${this.settings.command}" requires authentication (it ${when} ${redactor.redact(describeRequestError(error))})`
      + (methods.length ? `; it offers the auth methods ${redactor.redact(methods.join(', '))}` : '; it names no auth methods')
      + '. Log in once with the agent\'s own CLI on this machine (as the user the host runs as), or pass its credential '
      + 'through the provider\'s env config by name, e.g. `ANTHROPIC_API_KEY: true` (the env policy does not inherit credentials).'
  }

  private async startupError(error: unknown): Promise<AcpError> {
    const { settings, sdk } = this
    if (error instanceof AcpError) return error
    const overflowed = this.hooks.overflowError(this.stage, error)
    if (overflowed) return overflowed
    if (!(error instanceof sdk.RequestError)) {
      // The connection dropped: prefer the exit status when the process is going away.
      const exit = await raceTimeout(this.proc.settledExit, EXIT_STATUS_MS)
      if (exit) return this.exitedDuringStartup(exit)
    }
    if (error instanceof sdk.RequestError && isAuthError(error)) {
      return new AcpError('ACP_AUTH_REQUIRED', capDiagnostic(this.authGuidance(error)), { cause: error })
    }
    const what = error instanceof sdk.RequestError ? describeRequestError(error) : agentError(error)
    return new AcpError('ACP_STARTUP_FAILED',
      capDiagnostic(`The ACP agent "${settings.command}" failed during ${this.stage}: ${settings.redactor.redact(what)}.${this.hooks.stderrSection()}`),
      { cause: error })
  }

  private exitedDuringStartup(exit: ExitInfo): AcpError {
    const { command } = this.settings
    const overflowed = this.hooks.overflowError(this.stage)
    if (overflowed) return overflowed
    if (exit.error) {
      const hint = exit.error.code === 'ENOENT'
        ? ' Install it, or set command to its absolute path (it is run without a shell); a script also needs the interpreter its #! line names.'
        : ''
      return new AcpError('ACP_SPAWN_FAILED',
        `Could not start the ACP agent "${command}": ${exit.error.code ?? exit.error.message}.${hint}`, { cause: exit.error })
    }
    return new AcpError('ACP_STARTUP_FAILED',
      capDiagnostic(`The ACP agent "${command}" ${describeExit(exit)} during ${this.stage}.${this.hooks.stderrSection()}`))
  }

  private async initialize(): Promise<void> {
    const { sdk, settings, proc } = this
    this.stage = 'initialize'
    const app = sdk.client({ name: CLIENT_INFO.name })
      .onRequest(sdk.methods.client.session.requestPermission, ({ params }) => this.hooks.answerPermission(params))
      .onRequest(sdk.methods.client.elicitation.create, ({ params }) => this.hooks.answerElicitation(params))
      .onRequest(TELL_METHOD, (params: unknown) => params, ({ params }) => this.told(params))
    const stream = sdk.ndJsonStream(
      proc.input,
      Readable.toWeb(proc.stdout) as ReadableStream<Uint8Array>,
      { maxMessageBytes: Math.min(MAX_MESSAGE_BYTES, settings.maxStreamBytes) },
    )
    const connection = this.connection = app.connect(stream)
    let init: Acp.InitializeResponse
    // The nonce of the env's tool ceiling, heard only by this direct child (not by what it starts with its env).
    const crossingFor = settings.env[CROSSING_ENV.crossingFor]
    try {
      init = await connection.agent.request(sdk.methods.agent.initialize, {
        ...crossingFor ? { _meta: crossingForMeta(crossingFor) } : {},
        protocolVersion: PROTOCOL_VERSION,
        // We offer no file system and no terminal: the agent works with its own tools. Notices: an agent that
        // knows them sends its warnings as `notice` updates, not as message text glued to the answer.
        // Elicitation (form) only with `permission: escalate`: its questions park the run like a permission request.
        clientCapabilities: {
          fs: { readTextFile: false, writeTextFile: false }, terminal: false, session: { notices: {} },
          ...settings.permission === 'escalate' ? { elicitation: { form: {} } } : {},
        },
        clientInfo: CLIENT_INFO,
      })
    } catch (error) {
      if (error instanceof sdk.RequestError && error.code === UNSUPPORTED_VERSION_CODE) {
        throw new AcpError('ACP_PROTOCOL_VERSION',
          `The ACP agent "${settings.command}" does not support ACP protocol version ${PROTOCOL_VERSION} (${settings.redactor.redact(describeRequestError(error))}). `
          + 'Use a release of the agent (or its ACP adapter) that speaks protocol version 1.', { cause: error })
      }
      throw error
    }
    if (init?.protocolVersion !== PROTOCOL_VERSION) {
      throw new AcpError('ACP_PROTOCOL_VERSION',
        `The ACP agent "${settings.command}" answered initialize with protocol version ${settings.redactor.redact(agentText(String(JSON.stringify(init?.protocolVersion)), 64))}; `
        + `this client speaks only ACP protocol version ${PROTOCOL_VERSION}. `
        + 'Use a release of the agent (or its ACP adapter) that speaks protocol version 1.')
    }
    this.authMethods = Array.isArray(init.authMethods) ? init.authMethods.slice(0, 16) : []
    type Offered = { loadSession?: unknown; sessionCapabilities?: Record<string, unknown> | null } | undefined
    const capabilities = init.agentCapabilities as Offered
    this.canLoadSession = capabilities?.loadSession === true
    const sessions = capabilities?.sessionCapabilities
    const offered = (name: string) => typeof sessions?.[name] === 'object' && sessions[name] !== null
    this.canResumeSession = offered('resume')
    this.canCloseSession = offered('close')
    this.canForkSession = offered('fork')
    const name = (init as { agentInfo?: { name?: unknown } | null }).agentInfo?.name
    if (typeof name === 'string' && name.length <= 64) this.agentName = name
  }

  /** `_cordisSubagents/tell`: delivered (how many of how many), a refusal with its code, or not ours (method not found). */
  private told(params: unknown): { sent: number; of: number } {
    const given = (typeof params === 'object' && params !== null ? params : {}) as { sessionId?: unknown; message?: unknown }
    const answer = this.hooks.tell(given.sessionId, given.message)
    if (!answer) throw this.sdk.RequestError.methodNotFound(TELL_METHOD)
    if ('code' in answer) throw this.sdk.RequestError.invalidRequest({ code: answer.code }, answer.message)
    return answer
  }

  private async newSession(session: Pick<RunSettings, 'cwd' | 'mcpServers' | 'sessionMeta'>): Promise<void> {
    this.stage = 'session/new'
    const request: Acp.NewSessionRequest = { cwd: session.cwd, mcpServers: session.mcpServers }
    if (session.sessionMeta) request._meta = session.sessionMeta
    this.session = await this.connection!.agent.buildSession(request).start()
  }
}

/**
 * What a session is opened with, as one comparable string: `exact`, everything; `lasting`, without
 * what changes with every delegation (the crossing's remaining budget and the trace context).
 */
function sessionKey(session: Pick<RunSettings, 'cwd' | 'mcpServers' | 'sessionMeta'>, part: 'exact' | 'lasting'): string {
  return JSON.stringify([session.cwd, session.mcpServers, part === 'exact' ? session.sessionMeta ?? null : lastingMeta(session.sessionMeta)])
}

const PER_RUN_KEYS = new Set(['budget', 'traceparent', 'tracestate'])

/** `_meta` without its per-run fields (top level and in the crossing). */
function lastingMeta(meta: Record<string, unknown> | undefined): unknown {
  if (!meta) return null
  const lasting: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(meta)) {
    if (PER_RUN_KEYS.has(key)) continue
    lasting[key] = key === CROSSING_KEY && value !== null && typeof value === 'object' && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value as Record<string, unknown>).filter(([inner]) => !PER_RUN_KEYS.has(inner)))
      : value
  }
  return lasting
}

export function aborted(when: string): AcpError {
  return new AcpError('ABORTED', `The request was aborted ${when}; the agent process was stopped.`)
}
