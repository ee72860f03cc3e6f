import { stat } from 'node:fs/promises'
import { Readable, Writable } from 'node:stream'
import type * as Acp from '@agentclientprotocol/sdk'
import type { Logger } from 'cordis'
import type {
  ProviderStartRequest, SubagentResult, SubagentRun, SubagentStopReason, SubagentUpdate,
} from '@cordis-subagents/subagents-service'
import { capDiagnostic, describeError, MAX_DIAGNOSTIC_BYTES } from '@cordis-subagents/subagents-service'
import { AcpError } from './errors.js'
import { AgentProcess, describeExit, raceTimeout, type ExitInfo } from './process.js'
import { byteLength, Scrubber, tailBytes } from './scrub.js'

type Sdk = typeof import('@agentclientprotocol/sdk')
type Usage = NonNullable<SubagentResult['usage']>

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
  private allText = ''
  private textAfterTool = ''
  private readonly toolTitles = new Map<string, string>()
  private readonly denials: string[] = []
  private cancelReason?: string
  private cancelTimer?: NodeJS.Timeout
  /** When session/cancel was sent (performance.now()); teardown spends only what is left of cancelGrace. */
  private cancelledAt?: number
  /** When set, teardown skips the polite wait (grace already spent, or the process is gone). */
  private hurry = false
  private teardownPromise?: Promise<void>
  private disposal?: Promise<void>
  private detachSignal?: () => void
  private readonly onUpdate?: (update: SubagentUpdate) => void

  private constructor(
    private readonly sdk: Sdk,
    private readonly settings: RunSettings,
    request: ProviderStartRequest,
  ) {
    this.id = request.runId
    this.onUpdate = request.onUpdate
    this.result = new Promise<SubagentResult>((resolve) => this.settleResult = resolve)
    const { logger } = settings
    this.proc = new AgentProcess({
      command: settings.command,
      args: settings.args,
      cwd: settings.cwd,
      env: settings.env,
      onStderrLine: (line) => logger.debug('[%s %s] %s', settings.providerName, this.pid ?? '-', settings.scrubber.scrub(line)),
    })
    this.pid = this.proc.pid
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
    this.cancelledAt = performance.now()
    const { settings } = this
    settings.logger.debug('%s: cancelling run %s (%s)', settings.providerName, this.id, this.cancelReason)
    if (this.session && this.connection) {
      this.connection.agent.notify(this.sdk.methods.agent.session.cancel, { sessionId: this.session.sessionId })
        .catch(() => {})
    }
    this.cancelTimer = setTimeout(() => {
      this.hurry = true
      this.settle({
        stopReason: 'aborted',
        output: this.output(),
        diagnostic: this.diagnostic(`Cancelled (${this.cancelReason}); the agent did not end its turn within cancelGrace `
          + `(${settings.cancelGrace} ms) after session/cancel, so its process group was terminated.`),
      })
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
      if (!(error instanceof this.sdk.RequestError)) {
        // The connection dropped: prefer the exit status when the process is going away.
        const exit = await raceTimeout(this.proc.settledExit, EXIT_STATUS_MS)
        if (exit) throw this.exitedDuringStartup(exit)
      }
      throw new AcpError('ACP_STARTUP_FAILED',
        capDiagnostic(`The ACP agent "${settings.command}" failed during ${this.stage}: ${settings.scrubber.scrub(describeError(error))}.${this.stderrSection()}`),
        { cause: error })
    } finally {
      clearTimeout(timer)
      signal.removeEventListener('abort', onAbort!)
    }
  }

  private exitedDuringStartup(exit: ExitInfo): AcpError {
    const { command } = this.settings
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
      Readable.toWeb(proc.child.stdout!) as ReadableStream<Uint8Array>,
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
          `The ACP agent "${settings.command}" does not support ACP protocol version ${PROTOCOL_VERSION} (${error.message}). `
          + 'Use a release of the agent (or its ACP adapter) that speaks protocol version 1.', { cause: error })
      }
      throw error
    }
    if (init?.protocolVersion !== PROTOCOL_VERSION) {
      throw new AcpError('ACP_PROTOCOL_VERSION',
        `The ACP agent "${settings.command}" answered initialize with protocol version ${JSON.stringify(init?.protocolVersion)}; `
        + `this client speaks only ACP protocol version ${PROTOCOL_VERSION}. `
        + 'Use a release of the agent (or its ACP adapter) that speaks protocol version 1.')
    }
    this.stage = 'session/new'
    try {
      this.session = await connection.agent.buildSession({ cwd: settings.cwd, mcpServers: settings.mcpServers }).start()
    } catch (error) {
      if (error instanceof sdk.RequestError && error.code === -32000) {
        const methods = (init.authMethods ?? [])
          .map((method) => `"${method.id}"${method.name && method.name !== method.id ? ` (${method.name})` : ''}`)
        throw new AcpError('ACP_AUTH_REQUIRED',
          capDiagnostic(`The ACP agent "${settings.command}" requires authentication before it opens a session`
          + (methods.length ? `; it offers the auth methods ${methods.join(', ')}` : ' and names no auth methods')
          + '. Log in once with the agent\'s own CLI on this machine, or pass its credential through the provider\'s env config '
          + '(credential-shaped variables are not inherited unless listed there).'), { cause: error })
      }
      throw error
    }
    this.childId = this.session.sessionId
  }

  // -------------------------------------------------------------------------------------------
  // Prompt turn

  private beginPrompt(request: ProviderStartRequest) {
    this.stage = 'prompt'
    // The prompt goes out first, so a cancel for an already aborted signal follows it.
    this.promptTurn(request.prompt).catch((error) => {
      this.settle({ stopReason: 'error', output: this.output(), diagnostic: this.diagnostic(`Internal error of the ACP provider: ${describeError(error)}`) })
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
    const death = proc.settledExit.then((exit) => ({ kind: 'exit' as const, exit }))
    try {
      for (;;) {
        const next = await Promise.race([session.nextUpdate(), death])
        if (this.settled) return
        if (next.kind === 'exit') return this.settle(this.diedResult(next.exit))
        if (next.kind === 'stop') return this.settle(this.stopResult(next.response))
        this.handleUpdate(next.update)
      }
    } catch (error) {
      if (this.settled) return
      // The agent answered session/prompt with a JSON-RPC error: the turn failed, the connection did not.
      if (error instanceof this.sdk.RequestError) {
        return this.settle({
          stopReason: 'error',
          output: this.output(),
          diagnostic: this.diagnostic(`The agent answered session/prompt with an error: ${describeRequestError(error)}.`, this.stderrSection()),
        })
      }
      const exit = await raceTimeout(proc.settledExit, EXIT_STATUS_MS)
      if (this.settled) return
      if (exit) return this.settle(this.diedResult(exit))
      this.hurry = true
      this.settle({
        stopReason: 'error',
        output: this.output(),
        diagnostic: this.diagnostic(`The ACP connection to the agent failed during the prompt: ${describeError(error)}.`, this.stderrSection()),
      })
    }
  }

  private handleUpdate(update: Acp.SessionUpdate) {
    switch (update.sessionUpdate) {
      case 'agent_message_chunk': {
        if (update.content.type !== 'text') return
        const { text } = update.content
        this.allText += text
        this.textAfterTool += text
        return this.emit({ kind: 'text', text })
      }
      case 'agent_thought_chunk':
        if (update.content.type !== 'text') return
        return this.emit({ kind: 'thought', text: update.content.text })
      case 'tool_call': {
        this.textAfterTool = ''
        const title = update.title || update.name || update.toolCallId
        this.toolTitles.set(update.toolCallId, title)
        return this.emit({ kind: 'tool-call', tool: update.name || title, text: title })
      }
      case 'tool_call_update': {
        if (update.title) this.toolTitles.set(update.toolCallId, update.title)
        if (update.status !== 'completed' && update.status !== 'failed') return
        const title = this.toolTitles.get(update.toolCallId) ?? update.toolCallId
        return this.emit({ kind: 'tool-result', tool: update.name || title, isError: update.status === 'failed' })
      }
      case 'plan':
        return this.emit({
          kind: 'plan',
          text: update.entries.map((entry) => `[${entry.status}] ${entry.content}`).join('\n'),
        })
      default:
        return
    }
  }

  private answerPermission(params: Acp.RequestPermissionRequest): Acp.RequestPermissionResponse {
    const { settings } = this
    const title = params.toolCall.title || params.toolCall.toolCallId
    // After session/cancel the protocol wants every pending permission answered `cancelled`.
    if (this.settled || this.cancelReason !== undefined) return { outcome: { outcome: 'cancelled' } }
    let note = ''
    if (settings.permission === 'allow') {
      const allow = params.options.find((option) => option.kind === 'allow_once')
      if (allow) {
        settings.logger.debug('%s: allowed "%s" (%s)', settings.providerName, title, allow.optionId)
        this.emit({ kind: 'status', text: `permission granted: ${title}` })
        return { outcome: { outcome: 'selected', optionId: allow.optionId } }
      }
      note = '; no allow-once option was offered'
    }
    const reject = params.options.find((option) => option.kind === 'reject_once')
      ?? params.options.find((option) => option.kind === 'reject_always')
    this.emit({ kind: 'status', text: `permission denied: ${title}` })
    if (reject) {
      this.denials.push(`"${title}" (answered "${reject.name || reject.optionId}"${note})`)
      return { outcome: { outcome: 'selected', optionId: reject.optionId } }
    }
    this.denials.push(`"${title}" (no reject option was offered, answered cancelled${note})`)
    return { outcome: { outcome: 'cancelled' } }
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
    const result: SubagentResult = { stopReason, output: this.output() }
    const diagnostic = this.diagnostic(headline)
    if (diagnostic) result.diagnostic = diagnostic
    const usage = readUsage((response as { usage?: unknown }).usage)
    if (usage) result.usage = usage
    return result
  }

  private diedResult(exit: ExitInfo): SubagentResult {
    this.hurry = true
    return {
      stopReason: 'error',
      output: this.output(),
      diagnostic: this.diagnostic(`The ACP agent process "${this.settings.command}" ${describeExit(exit)} during the prompt.`, this.stderrSection()),
    }
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
      // After session/cancel the polite wait is what is left of cancelGrace, so the process is gone
      // within cancelGrace + killGrace of the cancel (plus the final SIGKILL wait).
      const spent = this.cancelledAt === undefined ? 0 : performance.now() - this.cancelledAt
      const grace = this.hurry ? 0 : Math.max(0, Math.round(settings.cancelGrace - spent))
      try {
        await this.proc.terminate({ grace, killGrace: settings.killGrace })
      } catch (error) {
        settings.logger.warn('%s: stopping agent process %s failed: %s', settings.providerName, this.pid, describeError(error))
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
  private output(): string {
    return this.textAfterTool.trim() ? this.textAfterTool : this.allText
  }

  /** headline + permission denials + tail, scrubbed and capped; undefined when there is nothing to say. */
  private diagnostic(headline?: string, tail = ''): string | undefined {
    const parts: string[] = []
    if (headline) parts.push(headline)
    if (this.denials.length) {
      parts.push(`Permission requests denied (permission: ${this.settings.permission}): ${this.denials.join('; ')}. `
        + 'Set permission: allow on the provider to let the agent proceed.')
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

/** "Internal error: model said 401 (code -32603)", with the error's data when it has any. */
function describeRequestError(error: Acp.RequestError): string {
  let data = ''
  if (error.data !== undefined && error.data !== null) {
    try {
      data = `; data: ${typeof error.data === 'string' ? error.data : JSON.stringify(error.data)}`
    } catch {
      // unserializable data is left out
    }
  }
  return `${error.message} (code ${error.code}${data})`
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

function readUsage(raw: unknown): Usage | undefined {
  if (!raw || typeof raw !== 'object') return undefined
  const { inputTokens, outputTokens, cachedReadTokens } = raw as Record<string, unknown>
  if (typeof inputTokens !== 'number' || typeof outputTokens !== 'number') return undefined
  const usage: Usage = { inputTokens, outputTokens }
  if (typeof cachedReadTokens === 'number') usage.cachedInputTokens = cachedReadTokens
  return usage
}
