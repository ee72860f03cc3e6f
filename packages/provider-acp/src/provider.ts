import { randomBytes } from 'node:crypto'
import { resolve } from 'node:path'
import type * as Acp from '@agentclientprotocol/sdk'
import type { Logger } from 'cordis'
import { configuredDirectory, crossingEnv, crossingMeta, remoteHandle, ToldRelay, treeCrossing } from '@cordis-subagents/shared'
import type { ProviderStartRequest, RunRecord, SubagentProvider, SubagentRun } from '@cordis-subagents/subagents-service'
import { Config } from './config.js'
import { rangeProblem } from './config-ranges.js'
import { childEnv, EnvMatcher, envProblem, secretValues, type EnvPolicy, type OwnVariables } from './env.js'
import { AcpError } from './errors.js'
import { AgentPool } from './pool/pool.js'
import { cgroupBase, retryDeferredCgroups } from './containment/cgroup.js'
import { resolveRunAs, warnIfRoot } from './containment/run-as.js'
import { coldSource, type ProcessSource } from './process-source.js'
import { Reaps } from './reaps.js'
import { SdkConsole } from './sdk-log.js'
import { AcpRun } from './run.js'
import { type AcpCheckpoint, restorePoint } from './resume/restore-point.js'
import { SessionBook, type ResumeTicket } from './resume/session-book.js'
import { checkSessionMeta } from './session-meta.js'
import { ForkSeed, parentHistory } from './fork/seed.js'
import { setTraceEnv, traceMeta } from './trace-context.js'
import { Redactor } from '@cordis-subagents/shared'

export interface ProviderOptions extends Config {
  /** Base for a relative `cwd` (default: process.cwd()). */
  baseDir?: string
  logger: Logger
  /** `inheritMcpServers`: the MCP servers of the app the parent may use (see inherited-mcp.ts). */
  inheritedMcpServers?: (parent: unknown, configured: readonly Acp.McpServer[]) => Acp.McpServer[]
}

/** The acp provider, plus what its owner needs to stop its process pool. */
export interface AcpProvider extends SubagentProvider {
  /**
   * Stops every spare and pooled process not serving a run (those stop when their run ends), and
   * resolves once the processes of finished runs, stopped in the background after the hand-back,
   * are gone. Idempotent.
   */
  stop(): Promise<void>
  /** Resolves once every finished run's process is gone (the teardowns pending now and meanwhile); the provider goes on. */
  reaped(): Promise<void>
  /** The process pool when `warm` or `reuse` is on (for tests and the bench). */
  readonly pool?: AgentPool
}

/** The schema's defaults: the one place they are written (a programmatic caller gets the same). */
const DEFAULTS = Config({ command: 'unused' })

/**
 * Builds the `acp` provider. The plugin calls this; it is exported for programmatic use.
 * Throws `ACP_INVALID_CONFIG` when `cwd` or `mcpServers` are unusable.
 */
export function createAcpProvider(options: ProviderOptions): AcpProvider {
  // The schema checks the ranges for a plugin load; a programmatic caller gets the same checks here.
  const outOfRange = rangeProblem(options)
  if (outOfRange) throw new AcpError('ACP_INVALID_CONFIG', `provider-acp: config.${outOfRange}`)
  const baseDir = options.baseDir ?? process.cwd()
  const configuredCwd = options.cwd ? resolveCwd(options.cwd, baseDir) : undefined
  const mcpServers = checkMcpServers(options.mcpServers ?? [])
  const configuredMeta = checkSessionMeta(options.sessionMeta)
  const policy: EnvPolicy = {
    inherit: options.inherit ?? DEFAULTS.inherit!, exclude: options.envExclude ?? DEFAULTS.envExclude!, set: options.env ?? DEFAULTS.env!,
  }
  if (!['core', 'all', 'none'].includes(policy.inherit)) {
    throw new AcpError('ACP_INVALID_CONFIG', `provider-acp: config.inherit must be core, all or none (got ${JSON.stringify(policy.inherit)}).`)
  }
  const badEnv = envProblem(policy.set)
  if (badEnv) throw new AcpError('ACP_INVALID_CONFIG', `provider-acp: config.${badEnv}`)
  const matcher = new EnvMatcher(policy.exclude)
  const providerName = options.name ?? DEFAULTS.name!
  const containment = options.containment ?? DEFAULTS.containment!
  const runAs = resolveRunAs(options.runAs, () => containment === 'auto' && cgroupBase() !== null)
  warnIfRoot(options.logger, providerName, runAs)
  // The ACP SDK's console lines, scrubbed with the latest run's redactor (one environment policy: the same secrets).
  let redactor = new Redactor(secretValues(process.env, policy, matcher))
  const sdkConsole = new SdkConsole(options.logger, providerName, () => redactor)
  const settings = {
    providerName,
    command: options.command,
    args: [...options.args ?? DEFAULTS.args!],
    permission: options.permission ?? DEFAULTS.permission!,
    maxParkedMs: options.maxParkedMs ?? DEFAULTS.maxParkedMs!,
    startupTimeout: options.startupTimeout ?? DEFAULTS.startupTimeout!,
    cancelGrace: options.cancelGrace ?? DEFAULTS.cancelGrace!,
    killGrace: options.killGrace ?? DEFAULTS.killGrace!,
    exitGrace: options.exitGrace ?? DEFAULTS.exitGrace!,
    maxOutputBytes: options.maxOutputBytes ?? DEFAULTS.maxOutputBytes!,
    maxStreamBytes: options.maxStreamBytes ?? DEFAULTS.maxStreamBytes!,
    containment,
    ...runAs ? { runAs } : {},
    mcpServers,
    logger: options.logger,
    reaps: new Reaps(options.logger, providerName),
    sdkConsole,
  }
  if (!['reject', 'allow', 'escalate'].includes(settings.permission)) {
    throw new AcpError('ACP_INVALID_CONFIG', `provider-acp: config.permission must be reject, allow or escalate (got ${JSON.stringify(settings.permission)}).`)
  }
  if (typeof settings.command !== 'string' || !settings.command) {
    throw new AcpError('ACP_INVALID_CONFIG', 'provider-acp: command is required (the executable of the ACP agent).')
  }
  const pool = createPool(options, providerName)
  const source: ProcessSource = pool ?? coldSource
  const resume = options.resume ?? DEFAULTS.resume!
  if (!['off', 'request', 'per-parent'].includes(resume)) {
    throw new AcpError('ACP_INVALID_CONFIG', `provider-acp: config.resume must be off, request or per-parent (got ${JSON.stringify(resume)}).`)
  }
  const context = options.context ?? DEFAULTS.context!
  if (!['fresh', 'fork'].includes(context)) {
    throw new AcpError('ACP_INVALID_CONFIG', `provider-acp: config.context must be fresh or fork (got ${JSON.stringify(context)}).`)
  }
  const maxSeedBytes = options.maxSeedBytes ?? DEFAULTS.maxSeedBytes!
  const book = new SessionBook()
  // Names this provider's children as the processes the env's tool ceiling is for (handshake: initialize `_meta`).
  // One per provider, so pooled processes still match by environment.
  const crossingFor = randomBytes(18).toString('base64url')
  /** A run for `request`; `restore`: continue that checkpoint's session (in its cwd) instead of opening one. */
  const launch = (request: ProviderStartRequest, restore?: AcpCheckpoint): Promise<AcpRun> => {
    const host = process.env
    // A caller that is not a real Agent may carry no cwd: fall back to the app directory.
    const parentCwd = typeof request.parent.cwd === 'string' && request.parent.cwd ? request.parent.cwd : baseDir
    const cwd = restore?.cwd ?? configuredCwd ?? resolve(baseDir, parentCwd)
    const crossing = treeCrossing(request)
    // What is left of the budget changes with every delegation: a pooled process (spawned ahead of
    // the request, or for an earlier one) gets it per session, in `_meta` only (see the README).
    const own = crossingEnv(crossing, { budget: !pool, for: crossingFor }) as OwnVariables
    const sessionMeta: Record<string, unknown> = { ...configuredMeta, ...crossingMeta(crossing), ...traceMeta(request.traceContext) }
    const ticket = !restore && wantsResume(resume, request) ? book.take(request.parent, cwd) : undefined
    // A fork child: the parent's completed turns as they are now (a restored run's session already holds its own).
    const fork = context === 'fork' && !restore ? new ForkSeed(parentHistory(request.parent), maxSeedBytes, ticket?.seeded) : undefined
    redactor = new Redactor(secretValues(host, policy, matcher))
    const starting = AcpRun.start({
      ...settings,
      cwd,
      ...options.inheritedMcpServers ? { mcpServers: [...mcpServers, ...options.inheritedMcpServers(request.parent, mcpServers)] } : {},
      env: setTraceEnv(childEnv(host, policy, own, matcher), pool ? undefined : request.traceContext),
      redactor,
      sessionMeta,
      // The child's `tell_parent` messages (when asked for) go to the delegating agent's inbox, labelled with the child's handle.
      ...crossing.aids?.tellParent ? { told: new ToldRelay(request.parent, childHandle(request), crossing.aids.tellParent) } : {},
      ...request.traceContext ? { promptMeta: traceMeta(request.traceContext) } : {},
      ...ticket?.sessionId ? { resumeSessionId: ticket.sessionId } : {},
      ...ticket ? { keepSession: true } : {},
      ...fork ? { fork } : {},
      ...restore ? { resumeSessionId: restore.sessionId, restore } : {},
    }, request, source)
    if (ticket) recordSession(ticket, starting, fork)
    return starting
  }
  const childHandle = (request: ProviderStartRequest) =>
    remoteHandle(request.parent, request.agentOptions?.name ?? providerName, request.runId)
  const provider: AcpProvider = {
    name: providerName,
    capabilities: { persona: false, toolFilter: false, depthLimit: false },
    inheritsParentContext: context === 'fork',
    start: (request: ProviderStartRequest): Promise<SubagentRun> => launch(request),
    /**
     * After a host restart: continues a journalled run's ACP session with session/load (the agent
     * must advertise loadSession and still have it). A parked run is parked again on its question;
     * any other continues with the request's prompt. Rejects `ACP_RESTORE_FAILED` otherwise.
     */
    restore(record: RunRecord, request: ProviderStartRequest): Promise<SubagentRun> {
      const point = restorePoint(record)
      if (typeof point === 'string') return Promise.reject(new AcpError('ACP_RESTORE_FAILED', `provider-acp cannot restore: ${point}; delegate the task again.`))
      return launch(request, point)
    },
    async stop() {
      book.clear()
      await Promise.all([pool?.stop(), settings.reaps.close()])
      // The SDK's console: what its budget counted is summarised; routed no more once no process of ours lives.
      sdkConsole.close()
      // Run cgroups that could not be removed when their run ended (a nested one still going away).
      retryDeferredCgroups()
    },
    reaped: () => settings.reaps.settled(),
    ...pool ? { pool } : {},
  }
  if (options.description) provider.description = options.description
  return provider
}

/**
 * Whether this delegation continues its parent's child session: always with `per-parent`
 * (unless the request says `resume: false`), only when the request says `resume: true` with
 * `request` (the subagent tool's per-load option), never with `off`.
 */
function wantsResume(mode: string, request: ProviderStartRequest): boolean {
  const asked = request.resume
  if (mode === 'per-parent') return asked !== false
  return mode === 'request' && asked === true
}

function recordSession(ticket: ResumeTicket, starting: Promise<AcpRun>, fork: ForkSeed | undefined) {
  starting.then(
    (run) => ticket.done(run.childId, run.loadable, run.result, fork?.through),
    () => ticket.done(undefined, false, Promise.resolve()),
  )
}

/** The pool for `warm` / `reuse` (its options' ranges are checked by the caller), or undefined when both are off. */
function createPool(options: ProviderOptions, providerName: string): AgentPool | undefined {
  const warm = options.warm ?? DEFAULTS.warm!
  const reuse = options.reuse ?? DEFAULTS.reuse!
  if (!warm && !reuse) return undefined
  const settings = {
    spares: options.spares ?? DEFAULTS.spares!,
    maxSessionsPerProcess: options.maxSessionsPerProcess ?? DEFAULTS.maxSessionsPerProcess!,
    maxProcesses: options.maxProcesses ?? DEFAULTS.maxProcesses!,
    idleTimeout: options.idleTimeout ?? DEFAULTS.idleTimeout!,
    maxSpareFailures: options.maxSpareFailures ?? DEFAULTS.maxSpareFailures!,
  }
  return new AgentPool({ providerName, logger: options.logger, warm: !!warm, reuse: !!reuse, ...settings })
}

/** Resolves and checks a configured cwd (shared's `configuredDirectory`): it must exist, be a directory and be enterable. */
function resolveCwd(cwd: string, baseDir: string): string {
  const { absolute, where, problem } = configuredDirectory(cwd, baseDir)
  if (problem) {
    throw new AcpError('ACP_INVALID_CONFIG',
      `provider-acp: config.cwd ${where} ${problem}. Set cwd to an existing directory, or omit it to use the parent agent's cwd.`)
  }
  return absolute
}

function checkMcpServers(servers: unknown[]): Acp.McpServer[] {
  if (!Array.isArray(servers)) {
    throw new AcpError('ACP_INVALID_CONFIG', 'provider-acp: config.mcpServers must be a list of MCP server entries.')
  }
  return servers.map((server, index) => {
    const where = `provider-acp: config.mcpServers[${index}]`
    if (!server || typeof server !== 'object' || Array.isArray(server)) {
      throw new AcpError('ACP_INVALID_CONFIG', `${where} must be an object with a name.`)
    }
    const entry = server as Record<string, unknown>
    if (typeof entry.name !== 'string' || !entry.name) {
      throw new AcpError('ACP_INVALID_CONFIG', `${where} needs a name.`)
    }
    if (entry.type === 'http' || entry.type === 'sse') {
      if (typeof entry.url !== 'string' || !entry.url) throw new AcpError('ACP_INVALID_CONFIG', `${where} (${entry.type}) needs a url.`)
      return { ...entry, headers: entry.headers ?? [] } as Acp.McpServer
    }
    if (typeof entry.command !== 'string' || !entry.command) {
      throw new AcpError('ACP_INVALID_CONFIG', `${where} needs a command (stdio server) or type http/sse with a url.`)
    }
    return { ...entry, args: entry.args ?? [], env: entry.env ?? [] } as Acp.McpServer
  })
}
