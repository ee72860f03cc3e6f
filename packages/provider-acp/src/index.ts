import { accessSync, constants, statSync } from 'node:fs'
import { isAbsolute, resolve } from 'node:path'
import type * as Acp from '@agentclientprotocol/sdk'
import { Context, Schema, type Logger } from 'cordis'
import { count, countProblem, duration, durationProblem } from '@cordis-subagents/shared'
import type { ProviderStartRequest, SubagentProvider, SubagentRun } from '@cordis-subagents/subagents-service'
import { childEnv, EnvMatcher, secretValues, type EnvInherit, type EnvPolicy, type OwnVariables } from './env.js'
import { AcpError } from './errors.js'
import { AcpRun } from './run.js'
import { Scrubber } from './text.js'

export { AcpError, type AcpErrorCode } from './errors.js'
export { AcpRun } from './run.js'
export { MAX_MESSAGE_BYTES, PROTOCOL_VERSION } from './sdk.js'
export { liveProcessGroups } from './process.js'
export { Scrubber, stripControl } from './text.js'
export { childEnv, CORE_ENV, DEFAULT_EXCLUDE, secretValues, type EnvInherit, type EnvPolicy } from './env.js'
export { cgroupBase } from './cgroup.js'

/** Most tool names passed to the child as its ceiling; a longer list is cut (never widened). */
export const MAX_ALLOWED_TOOLS = 256

export const name = 'provider-acp'
export const reusable = true
export const inject = ['subagents']

/** Plugin config. Only `command` is required; the schema fills the other defaults. */
export interface Config {
  name?: string
  command: string
  args?: string[]
  env?: Record<string, string | boolean>
  inherit?: EnvInherit
  envExclude?: string[]
  cwd?: string
  permission?: 'reject' | 'allow'
  startupTimeout?: number
  cancelGrace?: number
  killGrace?: number
  exitGrace?: number
  maxOutputBytes?: number
  maxStreamBytes?: number
  containment?: 'auto' | 'process-group'
  mcpServers?: Acp.McpServer[]
  description?: string
}

export const Config: Schema<Config> = Schema.object({
  name: Schema.string().pattern(/^[A-Za-z0-9_-]{1,64}$/).default('acp')
    .description('Provider name the subagent tool refers to (`provider: acp`). Load the plugin twice with different names for two agents.'),
  command: Schema.string().required()
    .description('Executable of the ACP agent, e.g. `npx` or `gemini`. Run without a shell, in its own process group.'),
  args: Schema.array(String).default([])
    .description('Arguments for the command, e.g. `["@zed-industries/claude-code-acp"]`.'),
  env: Schema.dict(Schema.union([String, Boolean])).default({})
    .description('Environment changes for the agent, applied after `inherit` and `envExclude`. A string sets the variable; `true` passes the host\'s value through (the way to hand over a credential such as `ANTHROPIC_API_KEY`, or anything `inherit: core` leaves out); `false` removes it.'),
  inherit: Schema.union([
    Schema.const('core').description('Only PATH, HOME, USER, LANG, LC_*, TERM, TMPDIR, TZ, XDG_*, npm/Node settings and proxies'),
    Schema.const('all').description('The host\'s whole environment, minus excluded names'),
    Schema.const('none').description('Nothing: only `env` and the provider\'s SUBAGENT_* variables'),
  ]).default('core')
    .description('Which of the host\'s environment variables the agent inherits. Excluded names (credentials) are never inherited.'),
  envExclude: Schema.array(String).default([])
    .description('More variable names never inherited, as case-insensitive globs (`*_INTERNAL_*`), on top of the built-in list (*KEY*, *TOKEN*, *SECRET*, *PASS*, *AUTH*, …). Their values are also scrubbed from diagnostics.'),
  cwd: Schema.string()
    .description('Working directory of the agent and its session: absolute, or relative to the app directory. Default: the parent agent\'s cwd.'),
  permission: Schema.union([
    Schema.const('reject').description('Deny (pick a reject option, so the agent can adapt)'),
    Schema.const('allow').description('Allow once'),
  ]).default('reject')
    .description('How permission requests of the agent are answered. Nobody is asked interactively.'),
  startupTimeout: duration({ min: 1 }).default(30_000)
    .description('Milliseconds for the agent to start and open a session (initialize + session/new).'),
  cancelGrace: duration().default(5_000)
    .description('Milliseconds the agent gets to end its turn after session/cancel before its process group is stopped.'),
  killGrace: duration().default(3_000)
    .description('Milliseconds between SIGTERM and SIGKILL of the agent\'s process group.'),
  exitGrace: duration({ max: 60_000 }).default(50)
    .description('Milliseconds the agent gets to exit by itself after its turn ended and its stdin closed, before SIGTERM. Short, because many agents ignore the end of stdin once a session exists; the result is handed back at once either way.'),
  maxOutputBytes: count({ min: 1 }).default(1024 * 1024)
    .description('Largest agent message text kept during a turn (UTF-8 bytes); more is dropped as it streams, and the diagnostic says how much.'),
  maxStreamBytes: count({ min: 1024 }).default(128 * 1024 * 1024)
    .description('Most ACP data (stdout bytes) one run may send. A run that sends more is stopped and ends as an error naming this limit.'),
  containment: Schema.union([
    Schema.const('auto').description('A cgroup v2 per run where the host may create one (Linux, root or a delegated subtree), else the process group'),
    Schema.const('process-group').description('The process group only'),
  ]).default('auto')
    .description('How the agent\'s processes are kept together for teardown. A cgroup also catches processes that leave the group (setsid, double fork).'),
  mcpServers: Schema.array(Schema.any()).default([])
    .description('MCP servers passed to session/new, in ACP form: `{ name, command, args, env: [{ name, value }] }` (stdio) or `{ type: http | sse, name, url, headers: [{ name, value }] }`.'),
  description: Schema.string()
    .description('Appended to the tool description the model sees, e.g. "Claude Code over ACP".'),
})

export interface ProviderOptions extends Config {
  /** Base for a relative `cwd` (default: process.cwd()). */
  baseDir?: string
  logger: Logger
}

/**
 * Builds the `acp` provider. The plugin calls this; it is exported for programmatic use.
 * Throws `ACP_INVALID_CONFIG` when `cwd` or `mcpServers` are unusable.
 */
export function createAcpProvider(options: ProviderOptions): SubagentProvider {
  const baseDir = options.baseDir ?? process.cwd()
  const configuredCwd = options.cwd ? resolveCwd(options.cwd, baseDir) : undefined
  const mcpServers = checkMcpServers(options.mcpServers ?? [])
  const policy: EnvPolicy = { inherit: options.inherit ?? 'core', exclude: options.envExclude ?? [], set: options.env ?? {} }
  if (!['core', 'all', 'none'].includes(policy.inherit)) {
    throw new AcpError('ACP_INVALID_CONFIG', `provider-acp: config.inherit must be core, all or none (got ${JSON.stringify(policy.inherit)}).`)
  }
  const matcher = new EnvMatcher(policy.exclude)
  const providerName = options.name ?? 'acp'
  const settings = {
    providerName,
    command: options.command,
    args: [...options.args ?? []],
    permission: options.permission ?? 'reject',
    startupTimeout: options.startupTimeout ?? 30_000,
    cancelGrace: options.cancelGrace ?? 5_000,
    killGrace: options.killGrace ?? 3_000,
    exitGrace: options.exitGrace ?? 50,
    maxOutputBytes: options.maxOutputBytes ?? 1024 * 1024,
    maxStreamBytes: options.maxStreamBytes ?? 128 * 1024 * 1024,
    containment: options.containment ?? 'auto',
    mcpServers,
    logger: options.logger,
  }
  if (typeof settings.command !== 'string' || !settings.command) {
    throw new AcpError('ACP_INVALID_CONFIG', 'provider-acp: command is required (the executable of the ACP agent).')
  }
  // The schema checks these for a plugin load; a programmatic caller gets the same checks here.
  const problem = durationProblem('startupTimeout', settings.startupTimeout, { min: 1 })
    ?? durationProblem('cancelGrace', settings.cancelGrace)
    ?? durationProblem('killGrace', settings.killGrace)
    ?? durationProblem('exitGrace', settings.exitGrace, { max: 60_000 })
    ?? countProblem('maxOutputBytes', settings.maxOutputBytes, { min: 1 })
    ?? countProblem('maxStreamBytes', settings.maxStreamBytes, { min: 1024 })
  if (problem) throw new AcpError('ACP_INVALID_CONFIG', `provider-acp: config.${problem}`)
  const provider: SubagentProvider = {
    name: providerName,
    capabilities: { persona: false, toolFilter: false, depthLimit: false },
    inheritsParentContext: false,
    start(request: ProviderStartRequest): Promise<SubagentRun> {
      const host = process.env
      // A caller that is not a real Agent may carry no cwd: fall back to the app directory.
      const parentCwd = typeof request.parent.cwd === 'string' && request.parent.cwd ? request.parent.cwd : baseDir
      const cwd = configuredCwd ?? resolve(baseDir, parentCwd)
      const allowedTools = parentToolNames(request.parent)
      const limits = treeLimits(request)
      const own: OwnVariables = { SUBAGENT_DEPTH: String(request.depth) }
      if (limits.maxDepth !== undefined) own.SUBAGENT_MAX_DEPTH = String(limits.maxDepth)
      if (limits.budget) own.SUBAGENT_BUDGET = JSON.stringify(limits.budget)
      if (allowedTools) own.SUBAGENT_ALLOWED_TOOLS = allowedTools.join(',')
      const sessionMeta: Record<string, unknown> = {
        cordisSubagents: {
          depth: request.depth,
          ...limits.maxDepth !== undefined ? { maxDepth: limits.maxDepth } : {},
          ...limits.budget ? { budget: limits.budget } : {},
          ...allowedTools ? { allowedTools } : {},
        },
      }
      return AcpRun.start({
        ...settings,
        cwd,
        env: childEnv(host, policy, own, matcher),
        scrubber: new Scrubber(secretValues(host, policy, matcher)),
        sessionMeta,
      }, request)
    },
  }
  if (options.description) provider.description = options.description
  return provider
}

export function apply(ctx: Context, config: Config) {
  const provider = createAcpProvider({
    ...config,
    baseDir: ctx.baseDir ?? process.cwd(),
    logger: ctx.logger('acp'),
  })
  ctx.subagents.register(provider)
}

/** Budget limits a child host of ours applies to its root runs (what `SUBAGENT_BUDGET` carries). */
const PASSED_LIMITS = ['maxSteps', 'maxTokens', 'maxToolCalls', 'maxWallMs', 'maxChildren'] as const

/**
 * The tree's limits as they cross the process boundary: the depth ceiling, and what is left of
 * the child's carved budget (finite limits only). A chain of our hosts keeps one ceiling and one
 * budget; the child's tokens come back as usage and are charged to this tree.
 */
function treeLimits(request: ProviderStartRequest): { maxDepth?: number; budget?: Record<string, number> } {
  const result: { maxDepth?: number; budget?: Record<string, number> } = {}
  const ceiling = request.maxDepthCeiling
  if (typeof ceiling === 'number' && Number.isSafeInteger(ceiling) && ceiling >= 0) result.maxDepth = ceiling
  const remaining = typeof request.budget?.remaining === 'function' ? request.budget.remaining() : undefined
  if (remaining) {
    const budget: Record<string, number> = {}
    for (const key of PASSED_LIMITS) {
      const value = remaining[key]
      if (Number.isFinite(value)) budget[key] = Math.max(0, Math.floor(value))
    }
    if (Object.keys(budget).length) result.budget = budget
  }
  return result
}

/**
 * The names of the tools the parent may use (its ceiling), for a child host of ours to apply
 * the same ceiling; undefined when the caller has no tool view (then no ceiling is claimed).
 */
function parentToolNames(parent: unknown): string[] | undefined {
  const tools = (parent as { tools?: { list?: () => Array<{ name?: unknown }> } } | undefined)?.tools
  if (!tools || typeof tools.list !== 'function') return undefined
  let names: string[]
  try {
    names = tools.list().map((tool) => tool?.name).filter((name): name is string => typeof name === 'string' && /^[A-Za-z0-9_-]{1,64}$/.test(name))
  } catch {
    return undefined
  }
  return [...new Set(names)].sort().slice(0, MAX_ALLOWED_TOOLS)
}

/** Resolves and checks a configured cwd: it must exist, be a directory and be enterable. */
function resolveCwd(cwd: string, baseDir: string): string {
  const absolute = isAbsolute(cwd) ? cwd : resolve(baseDir, cwd)
  const where = absolute === cwd ? cwd : `${JSON.stringify(cwd)} (resolved against the app directory ${baseDir} to ${absolute})`
  let problem: string | undefined
  try {
    if (!statSync(absolute).isDirectory()) problem = 'is not a directory'
    else accessSync(absolute, constants.X_OK)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    problem ??= code === 'ENOENT' ? 'does not exist' : code === 'EACCES' ? 'cannot be entered (permission denied)' : `is not usable (${code})`
  }
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
