import type * as Acp from '@agentclientprotocol/sdk'
import type { Logger } from 'cordis'
import { describeError, type TellRefusal } from '@cordis-subagents/shared'
import { MAX_INPUT_BACKLOG_BYTES } from './agent-streams.js'
import { AcpError, type AcpErrorCode } from './errors.js'
import { Handshake } from './handshake.js'
import { AgentProcess, describeExit } from './process.js'
import { stderrSection } from './result.js'
import type { Sdk } from './sdk.js'
import type { RunSettings } from './settings.js'

/** How a run got its process: spawned for it, a spare started ahead of need, or one a finished run gave back. */
export type ProcessKind = 'cold' | 'warm' | 'reused'

/** The run currently served by a slot: it answers the agent's permission requests and hears of an overflow. */
export interface SlotTenant {
  answerPermission(params: Acp.RequestPermissionRequest): Acp.RequestPermissionResponse | Promise<Acp.RequestPermissionResponse>
  answerElicitation(params: Acp.CreateElicitationRequest): Acp.CreateElicitationResponse | Promise<Acp.CreateElicitationResponse>
  /** A `tell_parent` message of the agent (undefined: the run offered no such tool). */
  tell?(sessionId: unknown, message: unknown): { sent: number; of: number } | TellRefusal | undefined
  overflow(): void
}

/**
 * One agent process and its ACP connection, which may serve several runs one after another
 * (one session each). Requests of the agent go to the current tenant; with none, a permission
 * request is answered `cancelled`.
 */
export class AgentSlot {
  readonly proc: AgentProcess
  readonly link: Handshake
  readonly pid: number | undefined
  tenant?: SlotTenant
  /** Sessions opened on this process so far. */
  sessions = 0
  /** Ids of the sessions opened or loaded on this connection (at most maxSessionsPerProcess). */
  readonly openSessions = new Set<string>()
  /** Why the stream was cut (maxStreamBytes, or the input backlog), once it was: the process is then never reused. */
  overflowed?: string
  /** The code a failure for `overflowed` carries (`ACP_STREAM_LIMIT`, `ACP_INPUT_BACKLOG`). */
  overflowCode?: AcpErrorCode
  /** Called when the stream is cut while no run holds the process (a waiting spare or pooled process). */
  onUnheldOverflow?: () => void
  /** A session open here was continued in another process: this copy is out of date, so the process is not reused. */
  stale = false

  constructor(sdk: Sdk, private readonly settings: RunSettings) {
    const { logger, redactor, providerName } = settings
    this.proc = new AgentProcess({
      command: settings.command,
      args: settings.args,
      cwd: settings.cwd,
      env: settings.env,
      containment: settings.containment,
      runAs: settings.runAs,
      wantStderrLines: () => debugEnabled(logger),
      onStderrLine: (line) => logger.debug('[%s %s] %s', providerName, this.pid ?? '-', redactor.redact(line)),
      // A warning the agent meant for us (a failed trace export) is repeated, never left in its stderr.
      onWarningLine: (line) => logger.warn('the ACP agent of provider "%s" (pid %s) warns: %s', providerName, this.pid ?? '-', redactor.redact(line)),
      maxStdoutBytes: settings.maxStreamBytes,
      onStdoutLimit: (limit) => this.overflow(`The agent sent more than maxStreamBytes (${limit} bytes) of ACP data in this run, so the run `
        + 'was stopped. Raise maxStreamBytes on the provider if this agent legitimately sends that much.', 'ACP_STREAM_LIMIT'),
      maxInputBacklog: MAX_INPUT_BACKLOG_BYTES,
      onInputBacklog: (limit) => this.overflow(`The agent stopped reading its stdin: more than ${limit} bytes of ACP messages waited `
        + 'to be written to it (the input backlog bound), so the run was stopped and its process group terminated. An ACP agent '
        + 'must keep reading its stdin while it works (replies to its own requests arrive there); check that it does not block '
        + 'its event loop or pause its input.', 'ACP_INPUT_BACKLOG'),
    })
    this.pid = this.proc.pid
    // The ACP SDK's console goes to our logger while this process lives, held or not; its connection reads nothing once closed.
    const release = settings.sdkConsole?.hold()
    if (release) void this.proc.settledExit.then(() => this.link.connection?.closed).then(release, release)
    this.link = new Handshake(sdk, settings, this.proc, {
      answerPermission: (params) => this.tenant ? this.tenant.answerPermission(params) : { outcome: { outcome: 'cancelled' } },
      answerElicitation: (params) => this.tenant ? this.tenant.answerElicitation(params) : { action: 'decline' },
      tell: (sessionId, message) => this.tenant?.tell?.(sessionId, message),
      overflowError: (stage, cause) => this.overflowed === undefined ? undefined : new AcpError(this.overflowCode ?? 'ACP_STARTUP_FAILED',
        `The ACP agent "${settings.command}" failed during ${stage}: ${this.overflowed}`, cause === undefined ? undefined : { cause }),
      stderrSection: () => stderrSection(this.proc.stderrTail(), redactor),
    })
  }

  /**
   * A waiting process (a spare, or an idle pooled one) must not keep the host's event loop
   * alive: the host may exit, and the exit safety net then kills it. A run refs it again.
   */
  park(parked: boolean) {
    const { child } = this.proc
    for (const handle of [child, child.stdin, child.stdout, child.stderr] as Array<{ ref?: () => void; unref?: () => void } | null>) {
      if (parked) handle?.unref?.()
      else handle?.ref?.()
    }
  }

  private overflow(reason: string, code?: AcpErrorCode) {
    if (this.overflowed !== undefined) return
    this.overflowed = reason
    this.overflowCode = code
    if (this.tenant) this.tenant.overflow()
    else this.onUnheldOverflow?.()
  }

  /** A run opened or loaded `sessionId` here. */
  opened(sessionId: string) {
    if (!this.openSessions.has(sessionId)) this.sessions++
    this.openSessions.add(sessionId)
  }

  /** After a clean turn: how long the agent may take to exit by itself at EOF before SIGTERM. */
  get exitGrace(): number {
    return this.settings.exitGrace
  }

  /** Whether the process may serve another session: alive, never overflowed, no out-of-date session. */
  get healthy(): boolean {
    return !this.proc.exit && !this.overflowed && !this.stale
  }

  /** close the connection → close stdin → wait `grace` → SIGTERM → killGrace → SIGKILL → wait. */
  async terminate(grace: number): Promise<void> {
    const { settings } = this
    this.tenant = undefined
    try {
      this.link.session?.dispose()
      this.link.connection?.close()
    } catch {
      // closing is best effort
    }
    try {
      await this.proc.terminate({ grace, killGrace: settings.killGrace })
    } catch (error) {
      settings.logger.warn('%s: stopping agent process %s failed: %s', settings.providerName, this.pid, describeError(error))
    }
    settings.logger.debug('%s: agent process %s ended (%s)', settings.providerName, this.pid,
      this.proc.exit ? describeExit(this.proc.exit) : 'still running')
  }
}

/** Whether any log target records `logger`'s debug lines (so work for them is worth doing). */
function debugEnabled(logger: Logger): boolean {
  const targets = (logger.constructor as unknown as { targets?: unknown[] }).targets
  const getLevel = (logger as unknown as { getLevel?: (target?: unknown) => number }).getLevel
  if (!Array.isArray(targets) || typeof getLevel !== 'function') return true
  return targets.some((target) => getLevel.call(logger, target) >= 3)
}
