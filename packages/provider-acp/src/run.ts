import { stat } from 'node:fs/promises'
import { Readable, Writable } from 'node:stream'
import type * as Acp from '@agentclientprotocol/sdk'
import type { Logger } from 'cordis'
import type {
  ProviderStartRequest, SubagentResult, SubagentRun, SubagentStopReason, SubagentUpdate,
} from '@cordis-subagents/subagents-service'
import { capDiagnostic, describeError, MAX_DIAGNOSTIC_BYTES } from '@cordis-subagents/subagents-service'
import { AcpError } from './errors.js'
import { OutputBuffer } from './output.js'
import { chooseAllow, chooseReject, isAbortLike } from './permission.js'
import { AgentProcess, describeExit, raceTimeout, type ExitInfo } from './process.js'
import { byteLength, headChars, Scrubber, tailBytes } from './scrub.js'
import { routeSdkConsole } from './sdk-console.js'
import { readAcpUsage, readContextUsed, UsageTracker } from './usage.js'

type Sdk = typeof import('@agentclientprotocol/sdk')

let sdkPromise: Promise<Sdk> | undefined

/** The ACP SDK, imported on first use (its cold import costs ~0.3 s). */
export function loadSdk(): Promise<Sdk> {
  return sdkPromise ??= import('@agentclientprotocol/sdk').catch((error) => {
    sdkPromise = undefined
    throw error
  })
}

/** The only ACP protocol version this client speaks. */
export const PROTOCOL_VERSION = 1
const CLIENT_INFO = { name: 'cordis-subagents', title: 'cordis-subagents provider-acp', version: '0.1.0' }
/** How long to wait for an exit status after the connection dropped. */
const EXIT_STATUS_MS = 400
/**
 * Largest single ACP message (one JSON line) read from an agent. Half the SDK's default: an
 * agent streams text in chunks, but a tool update may carry a whole file.
 */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024
/** Longest text of one progress update (a message chunk, a tool title, a plan). */
const UPDATE_TEXT_CHARS = 4096
/** Longest agent-chosen text (an error message, a permission title) put into a diagnostic. */
const AGENT_TEXT_CHARS = 1024
/** JSON-RPC code ACP uses for "authentication required". */
const AUTH_REQUIRED_CODE = -32000
const AUTH_MESSAGE = /auth(?:entication|orization)?\s+required|not\s+(?:logged|signed)\s+in|login\s+required|unauthenticated/i

export interface RunSettings {
  providerName: string
  command: string
  args: string[]
  env: Record<string, string>
  cwd: string
  permission: 'reject' | 'allow'
  startupTimeout: number
  cancelGrace: number
  killGrace: number
  mcpServers: Acp.McpServer[]
  logger: Logger
  scrubber: Scrubber
  /** After the turn ended and stdin closed: how long the agent may take to exit before SIGTERM. */
  exitGrace: number
  /** Message text kept during the turn (UTF-8 bytes). */
  maxOutputBytes: number
  /** Protocol bytes (stdout) one run may send; more ends the run as an error. */
  maxStreamBytes: number
  containment: 'auto' | 'process-group'
  /** Sent as `_meta` of `session/new` (the depth and the tool ceiling). */
  sessionMeta?: Record<string, unknown>
}

const STOP_REASONS: Record<string, SubagentStopReason> = {
  end_turn: 'completed',
  max_tokens: 'max-tokens',
  refusal: 'refusal',
  cancelled: 'aborted',
}

/**
 * One child agent: one subprocess, one ACP session, one prompt turn.
 * Created by `AcpRun.start`, which resolves once `session/new` succeeded (the hand-over).
 */
export class AcpRun implements SubagentRun {
  readonly id: string
  childId?: string
  readonly result: Promise<SubagentResult>
  /** Process id (and process-group id) of the agent. */
  readonly pid: number | undefined

  private readonly proc: AgentProcess
  private connection?: Acp.ClientConnection
  private session?: Acp.ActiveSession
  private stage: 'spawn' | 'initialize' | 'session/new' | 'prompt' = 'spawn'
  private settleResult!: (result: SubagentResult) => void
  private settled = false
  private readonly output: OutputBuffer
  private readonly usage = new UsageTracker()
  private readonly toolTitles = new Map<string, string>()
  private readonly denials: string[] = []
  private cancelReason?: string
  private cancelTimer?: NodeJS.Timeout
  /** When set, teardown skips the polite wait (grace already spent, or the process is gone). */
  private hurry = false
  private teardownPromise?: Promise<void>
  private disposal?: Promise<void>
  private detachSignal?: () => void
  private releaseConsole?: () => void
  private readonly onUpdate?: (update: SubagentUpdate) => void

  private constructor(
    private readonly sdk: Sdk,
    private readonly settings: RunSettings,
    request: ProviderStartRequest,
  ) {
    this.id = request.runId
    this.onUpdate = request.onUpdate
    this.result = new Promise<SubagentResult>((resolve) => this.settleResult = resolve)
    // Room for the note that says text was dropped, so text + note fit maxOutputBytes.
    this.output = new OutputBuffer(settings.maxOutputBytes - Math.min(256, Math.floor(settings.maxOutputBytes / 4)))
    const { logger, scrubber } = settings
    this.proc = new AgentProcess({
      command: settings.command,
      args: settings.args,
      cwd: settings.cwd,
      env: settings.env,
      containment: settings.containment,
      wantStderrLines: () => debugEnabled(logger),
      onStderrLine: (line) => logger.debug('[%s %s] %s', settings.providerName, this.pid ?? '-', scrubber.scrub(line)),
      maxStdoutBytes: settings.maxStreamBytes,
      onStdoutLimit: (limit) => this.overflow(limit),
    })
    this.pid = this.proc.pid
    this.releaseConsole = routeSdkConsole((text) => logger.warn('%s: ACP SDK: %s', settings.providerName, scrubber.scrub(text)))
  }

  /**
   * Spawns the agent and opens the session. Rejects with an `AcpError` (after the process group
   * is gone) on any failure, timeout or abort before `session/new` succeeded.
   */
  static async start(settings: RunSettings, request: ProviderStartRequest): Promise<AcpRun> {
    const { signal } = request
    if (signal.aborted) throw aborted('before the agent was spawned')
    await checkDirectory(settings.cwd)
    const sdk = await loadSdk()
    if (signal.aborted) throw aborted('before the agent was spawned')
    let run: AcpRun
    try {
      run = new AcpRun(sdk, settings, request)
    } catch (error) {
      throw new AcpError('ACP_SPAWN_FAILED',
        `Could not start the ACP agent "${settings.command}": ${describeError(error)}.`, { cause: error })
    }
    settings.logger.debug('%s: spawned %s (pid %s) in %s', settings.providerName, settings.command, run.pid, settings.cwd)
    try {
      await run.handshake(signal)
    } catch (error) {
      run.hurry = true
      await run.teardown()
      throw error
    }
    run.beginPrompt(request)
    return run
  }

  cancel(reason?: string): void {
    if (this.settled || this.cancelReason !== undefined) return
    this.cancelReason = reason || 'cancelled by the holder'
    const { settings } = this
    settings.logger.debug('%s: cancelling run %s (%s)', settings.providerName, this.id, this.cancelReason)
    if (this.session && this.connection) {
      this.connection.agent.notify(this.sdk.methods.agent.session.cancel, { sessionId: this.session.sessionId })
        .catch(() => {})
    }
    this.cancelTimer = setTimeout(() => {
      this.hurry = true
      this.settle(this.resultOf('aborted', `Cancelled (${this.cancelReason}); the agent did not end its turn within cancelGrace `
        + `(${settings.cancelGrace} ms) after session/cancel, so its process group was terminated.`))
    }, settings.cancelGrace)
  }

  dispose(): Promise<void> {
    return this.disposal ??= (async () => {
      if (!this.settled) this.cancel('the run was disposed')
      await this.result
      await this.teardown()
    })()
  }

  // -------------------------------------------------------------------------------------------
  // Handshake

  private async handshake(signal: AbortSignal): Promise<void> {
    const { settings } = this
    let timer: NodeJS.Timeout | undefined
    let onAbort: (() => void) | undefined
    const failure = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new AcpError('ACP_STARTUP_TIMEOUT',
        `The ACP agent "${settings.command}" did not finish ${this.stage} within startupTimeout (${settings.startupTimeout} ms); `
        + `it was stopped. Check that the command starts an ACP agent on stdio, or raise startupTimeout.${this.stderrSection()}`)),
      settings.startupTimeout)
      onAbort = () => reject(aborted(`during ${this.stage}`))
      signal.addEventListener('abort', onAbort, { once: true })
      this.proc.settledExit.then((exit) => reject(this.exitedDuringStartup(exit)))
    })
    failure.catch(() => {})
    try {
      await Promise.race([this.openSession(), failure])
    } catch (error) {
      if (error instanceof AcpError) throw error
      if (this.overflowed) throw new AcpError('ACP_STARTUP_FAILED', `The ACP agent "${settings.command}" failed during ${this.stage}: ${this.overflowed}`, { cause: error })
      if (!(error instanceof this.sdk.RequestError)) {
        // The connection dropped: prefer the exit status when the process is going away.
        const exit = await raceTimeout(this.proc.settledExit, EXIT_STATUS_MS)
        if (exit) throw this.exitedDuringStartup(exit)
      }
      if (error instanceof this.sdk.RequestError && isAuthError(error)) throw this.authRequired(error)
      const what = error instanceof this.sdk.RequestError ? describeRequestError(error) : agentText(describeError(error))
      throw new AcpError('ACP_STARTUP_FAILED',
        capDiagnostic(`The ACP agent "${settings.command}" failed during ${this.stage}: ${settings.scrubber.scrub(what)}.${this.stderrSection()}`),
        { cause: error })
    } finally {
      clearTimeout(timer)
      signal.removeEventListener('abort', onAbort!)
    }
  }

  private exitedDuringStartup(exit: ExitInfo): AcpError {
    const { command } = this.settings
    if (this.overflowed) return new AcpError('ACP_STARTUP_FAILED', `The ACP agent "${command}" failed during ${this.stage}: ${this.overflowed}`)
    if (exit.error) {
      const hint = exit.error.code === 'ENOENT'
        ? ' Install it, or set command to its absolute path (it is run without a shell).'
        : ''
      return new AcpError('ACP_SPAWN_FAILED',
        `Could not start the ACP agent "${command}": ${exit.error.code ?? exit.error.message}.${hint}`, { cause: exit.error })
    }
    return new AcpError('ACP_STARTUP_FAILED',
      capDiagnostic(`The ACP agent "${command}" ${describeExit(exit)} during ${this.stage}.${this.stderrSection()}`))
  }

  private async openSession(): Promise<void> {
    const { sdk, settings, proc } = this
    this.stage = 'initialize'
    const app = sdk.client({ name: CLIENT_INFO.name })
      .onRequest(sdk.methods.client.session.requestPermission, ({ params }) => this.answerPermission(params))
    const stream = sdk.ndJsonStream(
      Writable.toWeb(proc.child.stdin!) as WritableStream<Uint8Array>,
      Readable.toWeb(proc.stdout) as ReadableStream<Uint8Array>,
      { maxMessageBytes: Math.min(MAX_MESSAGE_BYTES, settings.maxStreamBytes) },
    )
    const connection = this.connection = app.connect(stream)
    let init: Acp.InitializeResponse
    try {
      init = await connection.agent.request(sdk.methods.agent.initialize, {
        protocolVersion: PROTOCOL_VERSION,
        // We offer no file system and no terminal: the agent works with its own tools.
        clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
        clientInfo: CLIENT_INFO,
      })
    } catch (error) {
      if (error instanceof sdk.RequestError && error.code === -32022) {
        throw new AcpError('ACP_PROTOCOL_VERSION',
          `The ACP agent "${settings.command}" does not support ACP protocol version ${PROTOCOL_VERSION} (${settings.scrubber.scrub(describeRequestError(error))}). `
          + 'Use a release of the agent (or its ACP adapter) that speaks protocol version 1.', { cause: error })
      }
      throw error
    }
    if (init?.protocolVersion !== PROTOCOL_VERSION) {
      throw new AcpError('ACP_PROTOCOL_VERSION',
        `The ACP agent "${settings.command}" answered initialize with protocol version ${settings.scrubber.scrub(agentText(String(JSON.stringify(init?.protocolVersion)), 64))}; `
        + `this client speaks only ACP protocol version ${PROTOCOL_VERSION}. `
        + 'Use a release of the agent (or its ACP adapter) that speaks protocol version 1.')
    }
    this.authMethods = Array.isArray(init.authMethods) ? init.authMethods.slice(0, 16) : []
    this.stage = 'session/new'
    const request: Acp.NewSessionRequest = { cwd: settings.cwd, mcpServers: settings.mcpServers }
    if (settings.sessionMeta) request._meta = settings.sessionMeta
    this.session = await connection.agent.buildSession(request).start()
    this.childId = this.session.sessionId
  }

  private authMethods: Acp.AuthMethod[] = []

  /** "ACP_AUTH_REQUIRED" guidance for an auth error at `stage`, naming the offered auth methods. */
  private authGuidance(error: Acp.RequestError): string {
    const methods = this.authMethods
      .map((method) => agentText(`"${method.id}"${method.name && method.name !== method.id ? ` (${method.name})` : ''}`))
    const when = this.stage === 'prompt' ? 'answered session/prompt with' : `answered ${this.stage} with`
    return this.settings.scrubber.scrub(`The ACP agent "${this.settings.command}" requires authentication (it ${when} ${describeRequestError(error)})`
      + (methods.length ? `; it offers the auth methods ${methods.join(', ')}` : '; it names no auth methods')
      + '. Log in once with the agent\'s own CLI on this machine (as the user the host runs as), or pass its credential '
      + 'through the provider\'s env config by name, e.g. `ANTHROPIC_API_KEY: true` (the env policy does not inherit credentials).')
  }

  private authRequired(error: Acp.RequestError): AcpError {
    return new AcpError('ACP_AUTH_REQUIRED', capDiagnostic(this.authGuidance(error)), { cause: error })
  }

  // -------------------------------------------------------------------------------------------
  // Prompt turn

  private beginPrompt(request: ProviderStartRequest) {
    this.stage = 'prompt'
    // The prompt goes out first, so a cancel for an already aborted signal follows it.
    this.promptTurn(request.prompt).catch((error) => {
      this.settle(this.resultOf('error', `Internal error of the ACP provider: ${agentText(describeError(error))}`))
    })
    const { signal } = request
    const onAbort = () => this.cancel(reasonText(signal.reason) ?? 'the request signal was aborted')
    signal.addEventListener('abort', onAbort, { once: true })
    this.detachSignal = () => signal.removeEventListener('abort', onAbort)
    if (signal.aborted) onAbort()
  }

  private async promptTurn(prompt: string): Promise<void> {
    const session = this.session!
    const { proc } = this
    const response = session.prompt([{ type: 'text', text: prompt }])
    response.catch(() => {})
    // A dead process ends the turn at once; its last output gets a moment to arrive first.
    // Not Promise.race with the (long-pending) exit promise: every race would add a reaction to
    // it that keeps that update alive until the process exits, i.e. the whole stream.
    type Next = Awaited<ReturnType<Acp.ActiveSession['nextUpdate']>> | { kind: 'exit'; exit: ExitInfo }
    let died: ExitInfo | undefined
    let wake: ((next: Next) => void) | undefined
    proc.settledExit.then((exit) => {
      died = exit
      wake?.({ kind: 'exit', exit })
    })
    const nextEvent = () => new Promise<Next>((resolve, reject) => {
      if (died) return resolve({ kind: 'exit', exit: died })
      wake = resolve
      session.nextUpdate().then(resolve, reject)
    })
    try {
      for (;;) {
        const next = await nextEvent()
        wake = undefined
        if (this.settled) return
        if (next.kind === 'exit') return this.settle(this.diedResult(next.exit))
        if (next.kind === 'stop') return this.settle(this.stopResult(next.response))
        this.handleUpdate(next.update)
      }
    } catch (error) {
      if (this.settled) return
      // The agent answered session/prompt with a JSON-RPC error: the turn failed, the connection did not.
      if (error instanceof this.sdk.RequestError) {
        const headline = isAuthError(error)
          ? `[ACP_AUTH_REQUIRED] ${this.authGuidance(error)}`
          : `The agent answered session/prompt with an error: ${describeRequestError(error)}.`
        return this.settle({
          stopReason: 'error',
          output: this.outputText(),
          diagnostic: this.diagnostic(headline, this.stderrSection()),
        })
      }
      const tooLarge = (error as Error)?.name === 'MessageTooLargeError'
      const exit = tooLarge ? undefined : await raceTimeout(proc.settledExit, EXIT_STATUS_MS)
      if (this.settled) return
      if (exit) return this.settle(this.diedResult(exit))
      this.hurry = true
      this.settle({
        stopReason: 'error',
        output: this.outputText(),
        diagnostic: this.diagnostic(tooLarge
          ? `The agent sent a single ACP message larger than ${MAX_MESSAGE_BYTES} bytes (the per-message limit); the run was stopped.`
          : `The ACP connection to the agent failed during the prompt: ${agentText(describeError(error))}.`, this.stderrSection()),
      })
    }
  }

  private handleUpdate(update: Acp.SessionUpdate) {
    switch (update.sessionUpdate) {
      case 'agent_message_chunk': {
        if (update.content.type !== 'text' || typeof update.content.text !== 'string') return
        const { text } = update.content
        this.output.push(text, typeof update.messageId === 'string' ? update.messageId : undefined)
        return this.emit({ kind: 'text', text: this.progressText(text) })
      }
      case 'agent_thought_chunk':
        if (update.content.type !== 'text' || typeof update.content.text !== 'string') return
        return this.emit({ kind: 'thought', text: this.progressText(update.content.text) })
      case 'tool_call': {
        this.output.toolCall()
        const title = this.progressText(update.title || update.toolCallId || '', 200)
        this.rememberTitle(toolKey(update.toolCallId), title)
        return this.emit({ kind: 'tool-call', tool: title, text: title })
      }
      case 'tool_call_update': {
        if (update.title) this.rememberTitle(toolKey(update.toolCallId), this.progressText(update.title, 200))
        if (update.status !== 'completed' && update.status !== 'failed') return
        const title = this.toolTitles.get(toolKey(update.toolCallId)) ?? this.progressText(update.toolCallId ?? '', 200)
        return this.emit({ kind: 'tool-result', tool: title, isError: update.status === 'failed' })
      }
      case 'plan':
        return this.emit({
          kind: 'plan',
          text: this.progressText(update.entries.slice(0, 100).map((entry) => `[${entry.status}] ${headChars(String(entry.content), 500)}`).join('\n')),
        })
      case 'usage_update': {
        // Context occupancy, not tokens spent; token usage may ride along in _meta.usage.
        const meta = (update as { _meta?: Record<string, unknown> | null })._meta
        if (meta && meta.usage !== undefined) {
          const tokens = readAcpUsage(meta.usage)
          if (typeof tokens === 'string') this.ignoredUsage('usage_update _meta.usage', tokens)
          else this.reportUsage(this.usage.tokens(tokens))
        }
        const used = readContextUsed(update)
        if (typeof used === 'string') return this.ignoredUsage('usage_update', used)
        return this.reportUsage(this.usage.context(used))
      }
      default:
        return
    }
  }

  private reportUsage(grown: SubagentResult['usage']) {
    if (grown) this.emit({ kind: 'usage', usage: grown })
  }

  private ignoredUsage(where: string, why: string) {
    this.settings.logger.debug('%s: ignored usage from %s: %s', this.settings.providerName, where, why)
  }

  private rememberTitle(id: string, title: string) {
    // Bounded: an agent announcing a million tool calls must not grow this map without end.
    if (this.toolTitles.size >= 1000 && !this.toolTitles.has(id)) this.toolTitles.delete(this.toolTitles.keys().next().value!)
    this.toolTitles.set(id, title)
  }

  /** Agent text for a progress update: capped, control characters and secrets removed. */
  private progressText(text: string, maxChars = UPDATE_TEXT_CHARS): string {
    return this.settings.scrubber.scrub(headChars(String(text), maxChars))
  }

  private answerPermission(params: Acp.RequestPermissionRequest): Acp.RequestPermissionResponse {
    const { settings } = this
    const title = agentText(String(params.toolCall?.title || params.toolCall?.toolCallId || 'a tool call'), 200)
    // After session/cancel the protocol wants every pending permission answered `cancelled`.
    if (this.settled || this.cancelReason !== undefined) return { outcome: { outcome: 'cancelled' } }
    const options = Array.isArray(params.options) ? params.options : []
    let note = ''
    if (settings.permission === 'allow') {
      const allow = chooseAllow(options)
      if (allow) {
        settings.logger.debug('%s: allowed "%s" (%s)', settings.providerName, settings.scrubber.scrub(title), agentText(allow.optionId, 100))
        this.emit({ kind: 'status', text: this.progressText(`permission granted: ${title}`) })
        return { outcome: { outcome: 'selected', optionId: allow.optionId } }
      }
      note = '; no allow-once option was offered'
    }
    const reject = chooseReject(options)
    this.emit({ kind: 'status', text: this.progressText(`permission denied: ${title}`) })
    if (this.denials.length < 20) {
      if (reject) {
        const abort = isAbortLike(reject) ? ', the only reject option offered, which ends the turn' : ''
        this.denials.push(`"${title}" (answered "${agentText(reject.name || reject.optionId, 100)}"${abort}${note})`)
      } else {
        this.denials.push(`"${title}" (no reject option was offered, answered cancelled${note})`)
      }
    }
    return reject ? { outcome: { outcome: 'selected', optionId: reject.optionId } } : { outcome: { outcome: 'cancelled' } }
  }

  private stopResult(response: Acp.PromptResponse): SubagentResult {
    const reason = response.stopReason as string
    const known = Object.hasOwn(STOP_REASONS, reason)
    const stopReason = known ? STOP_REASONS[reason] : 'error'
    let headline: string | undefined
    if (reason === 'max_turn_requests') {
      headline = 'The agent stopped at its limit of model requests for one turn (max_turn_requests).'
    } else if (!known) {
      headline = `The agent ended its turn with an unknown stop reason ${JSON.stringify(response.stopReason)}.`
    } else if (reason === 'cancelled') {
      headline = this.cancelReason !== undefined
        ? `Cancelled (${this.cancelReason}).`
        : 'The agent cancelled its turn by itself.'
    } else if (reason === 'max_tokens') {
      headline = 'The agent hit its output token limit (max_tokens).'
    } else if (reason === 'refusal') {
      headline = 'The agent refused the task (refusal).'
    }
    const raw = (response as { usage?: unknown }).usage
    if (raw !== undefined && raw !== null) {
      const tokens = readAcpUsage(raw)
      if (typeof tokens === 'string') this.ignoredUsage('PromptResponse.usage', tokens)
      else this.reportUsage(this.usage.tokens(tokens))
    }
    return this.resultOf(stopReason, headline)
  }

  /** A result with the output, the diagnostic (headline, denials, dropped text, tail) and the usage so far. */
  private resultOf(stopReason: SubagentStopReason, headline?: string, tail = ''): SubagentResult {
    const result: SubagentResult = { stopReason, output: this.outputText() }
    const diagnostic = this.diagnostic(headline, tail)
    if (diagnostic) result.diagnostic = diagnostic
    const usage = this.usage.current()
    if (usage) result.usage = usage
    return result
  }

  /** The stream passed maxStreamBytes: stop reading, end the run as an error naming the limit. */
  private overflow(limit: number) {
    this.overflowed = `The agent sent more than maxStreamBytes (${limit} bytes) of ACP data in this run, so the run was stopped. `
      + 'Raise maxStreamBytes on the provider if this agent legitimately sends that much.'
    // Before the hand-over the handshake fails with this text instead (see handshake()).
    if (this.settled || this.stage !== 'prompt') return
    this.hurry = true
    this.settle(this.resultOf('error', this.overflowed))
  }

  private overflowed?: string

  private diedResult(exit: ExitInfo): SubagentResult {
    this.hurry = true
    return this.resultOf('error', `The ACP agent process "${this.settings.command}" ${describeExit(exit)} during the prompt.`, this.stderrSection())
  }

  private settle(result: SubagentResult) {
    if (this.settled) return
    this.settled = true
    clearTimeout(this.cancelTimer)
    this.detachSignal?.()
    this.settleResult(result)
    // One process per run: once the turn is over the process has nothing left to do.
    void this.teardown()
  }

  // -------------------------------------------------------------------------------------------
  // Teardown

  /** close the connection → close stdin → SIGTERM after cancelGrace → SIGKILL after killGrace → wait. */
  private teardown(): Promise<void> {
    return this.teardownPromise ??= (async () => {
      const { settings } = this
      try {
        this.session?.dispose()
        this.connection?.close()
      } catch {
        // closing is best effort
      }
      // The turn is over (or was given up on): the agent gets a short exitGrace to leave at EOF,
      // then SIGTERM. Agents that ignore EOF once a session exists (Codex' and Claude's adapters)
      // cost exitGrace, not cancelGrace. A cancelled run is still gone within cancelGrace +
      // exitGrace + killGrace of the cancel.
      const grace = this.hurry ? 0 : settings.exitGrace
      try {
        await this.proc.terminate({ grace, killGrace: settings.killGrace })
      } catch (error) {
        settings.logger.warn('%s: stopping agent process %s failed: %s', settings.providerName, this.pid, describeError(error))
      } finally {
        this.releaseConsole?.()
      }
      settings.logger.debug('%s: agent process %s ended (%s)', settings.providerName, this.pid,
        this.proc.exit ? describeExit(this.proc.exit) : 'still running')
    })()
  }

  // -------------------------------------------------------------------------------------------
  // Helpers

  private emit(update: SubagentUpdate) {
    if (!this.onUpdate || this.settled) return
    try {
      this.onUpdate(update)
    } catch (error) {
      this.settings.logger.warn('%s: onUpdate threw: %s', this.settings.providerName, describeError(error))
    }
  }

  /** The agent's message text after its last tool call; all its message text when that is empty. */
  private outputText(): string {
    const text = this.output.text()
    const dropped = this.output.dropped()
    if (!dropped) return text
    return `${text}\n\n[Output truncated by provider-acp: the agent sent ${byteLength(text) + dropped} bytes of message text; `
      + `the first ${byteLength(text)} are kept (maxOutputBytes ${this.settings.maxOutputBytes}).]`
  }

  /** headline + permission denials + dropped text + tail, scrubbed and capped; undefined when there is nothing to say. */
  private diagnostic(headline?: string, tail = ''): string | undefined {
    const parts: string[] = []
    if (headline) parts.push(headline)
    if (this.denials.length) {
      parts.push(`Permission requests denied (permission: ${this.settings.permission}): ${this.denials.join('; ')}. `
        + 'Set permission: allow on the provider to let the agent proceed.')
    }
    const dropped = this.output.dropped()
    if (dropped) {
      parts.push(`The agent's message text exceeded maxOutputBytes (${this.settings.maxOutputBytes} bytes): `
        + `${dropped} bytes were dropped as they streamed (the output says where).`)
    }
    if (!parts.length && !tail) return undefined
    const head = this.settings.scrubber.scrub(parts.join(' '))
    return capDiagnostic(head, MAX_DIAGNOSTIC_BYTES - byteLength(tail)) + tail
  }

  /** "\nstderr (tail): …", scrubbed, leaving room for a headline within the 4 KiB diagnostic. */
  private stderrSection(): string {
    const raw = this.proc.stderrTail()
    if (!raw.trim()) return ''
    const scrubbed = this.settings.scrubber.scrub(tailBytes(raw, 16 * 1024)).trimEnd()
    const label = '\nstderr (last lines):\n'
    const tail = tailBytes(scrubbed, 3 * 1024 - byteLength(label))
    return label + tail
  }
}

function aborted(when: string): AcpError {
  return new AcpError('ABORTED', `The request was aborted ${when}; the agent process was stopped.`)
}

/**
 * "Internal error: model said 401 (code -32603; data: {…})": the agent's message and data, each
 * capped before anything else looks at them.
 */
function describeRequestError(error: Acp.RequestError): string {
  let data = ''
  if (error.data !== undefined && error.data !== null) {
    try {
      const text = typeof error.data === 'string' ? error.data : JSON.stringify(error.data)
      if (text) data = `; data: ${agentText(text, 512)}`
    } catch {
      // unserializable data is left out
    }
  }
  return `${agentText(String(error.message))} (code ${error.code}${data})`
}

/** A tool call id as a map key: capped, so a huge id costs no memory (and both lookups cap alike). */
function toolKey(id: unknown): string {
  return headChars(String(id ?? ''), 256)
}

/** Agent-chosen text, capped first (everything after this is linear in the cap). */
function agentText(text: string, maxChars = AGENT_TEXT_CHARS): string {
  return headChars(text, maxChars)
}

function isAuthError(error: Acp.RequestError): boolean {
  return error.code === AUTH_REQUIRED_CODE || AUTH_MESSAGE.test(headChars(String(error.message), AGENT_TEXT_CHARS))
}

/** Whether any log target records `logger`'s debug lines (so work for them is worth doing). */
function debugEnabled(logger: Logger): boolean {
  const targets = (logger.constructor as unknown as { targets?: unknown[] }).targets
  const getLevel = (logger as unknown as { getLevel?: (target?: unknown) => number }).getLevel
  if (!Array.isArray(targets) || typeof getLevel !== 'function') return true
  return targets.some((target) => getLevel.call(logger, target) >= 3)
}

function reasonText(reason: unknown): string | undefined {
  if (reason === undefined) return undefined
  return describeError(reason)
}

async function checkDirectory(cwd: string) {
  try {
    const info = await stat(cwd)
    if (info.isDirectory()) return
  } catch {
    // reported below
  }
  throw new AcpError('ACP_SPAWN_FAILED',
    `The working directory for the ACP agent, ${cwd}, does not exist or is not a directory. Set the provider's cwd, or run the parent agent in an existing directory.`)
}
