import type * as Acp from '@agentclientprotocol/sdk'
import { Schema } from 'cordis'
import { choice, count, duration, NAME_PATTERN } from '@cordis-subagents/shared'
import type { EnvInherit } from './env.js'

/** Plugin config. Only `command` is required; the schema fills the other defaults. */
export interface Config {
  name?: string
  command: string
  args?: string[]
  env?: Record<string, string | boolean>
  inherit?: EnvInherit
  envExclude?: string[]
  cwd?: string
  permission?: 'reject' | 'allow' | 'escalate'
  maxParkedMs?: number
  startupTimeout?: number
  cancelGrace?: number
  killGrace?: number
  exitGrace?: number
  maxOutputBytes?: number
  maxStreamBytes?: number
  containment?: 'auto' | 'process-group'
  runAs?: string
  mcpServers?: Acp.McpServer[]
  sessionMeta?: Record<string, unknown>
  inheritMcpServers?: boolean
  description?: string
  warm?: boolean
  spares?: number
  reuse?: boolean
  maxSessionsPerProcess?: number
  maxProcesses?: number
  idleTimeout?: number
  maxSpareFailures?: number
  resume?: 'off' | 'request' | 'per-parent'
  context?: 'fresh' | 'fork'
  maxSeedBytes?: number
}

export const Config: Schema<Config> = Schema.object({
  name: Schema.string().pattern(NAME_PATTERN).default('acp')
    .description('Provider name the subagent tool refers to (`provider: acp`). Load the plugin twice with different names for two agents.'),
  command: Schema.string().required()
    .description('Executable of the ACP agent, e.g. `npx` or `gemini`. Run without a shell, in its own process group.'),
  args: Schema.array(String).default([])
    .description('Arguments for the command, e.g. `["@zed-industries/claude-agent-acp"]`.'),
  env: Schema.dict(Schema.union([String, Boolean])).default({})
    .description('Environment changes for the agent, applied after `inherit` and `envExclude`. A string sets the variable; `true` passes the host\'s value through (the way to hand over a credential such as `ANTHROPIC_API_KEY`, or anything `inherit: core` leaves out); `false` removes it.'),
  inherit: choice({
    core: 'Only PATH, HOME, USER, LANG, LC_*, TERM, TMPDIR, TZ, XDG_*, npm/Node settings and proxies',
    all: 'The host\'s whole environment, minus excluded names',
    none: 'Nothing: only `env` and the provider\'s SUBAGENT_* variables',
  }).default('core')
    .description('Which of the host\'s environment variables the agent inherits. Excluded names (credentials) are never inherited.'),
  envExclude: Schema.array(String).default([])
    .description('More variable names never inherited, as case-insensitive globs (`*_INTERNAL_*`), on top of the built-in list (*KEY*, *TOKEN*, *SECRET*, *PASS*, *AUTH*, …). Their values are also scrubbed from diagnostics.'),
  cwd: Schema.string()
    .description('Working directory of the agent and its session: absolute, or relative to the app directory. Default: the parent agent\'s cwd.'),
  permission: choice({
    reject: 'Deny (pick a reject option, so the agent can adapt)',
    allow: 'Allow once',
    escalate: 'Ask the holder: the run parks (pending) with the request as its question until resume(answer)',
  }).default('reject')
    .description('How permission requests of the agent are answered: by policy (reject, allow), or asked up the tree (escalate).'),
  maxParkedMs: duration({ min: 1 }).default(3_600_000)
    .description('Milliseconds a run may wait parked on a question (an escalated permission request, or a question of a served host of ours) before it ends as timeout, the question answered cancelled.'),
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
  containment: choice({
    auto: 'A cgroup v2 per run where the host may create one (Linux, root or a delegated subtree), else the process group',
    'process-group': 'The process group only',
  }).default('auto')
    .description('How the agent\'s processes are kept together for teardown. A cgroup also catches processes that leave the group (setsid, double fork).'),
  runAs: Schema.string()
    .description('Run the agent as this unprivileged user (a name, a uid, or uid:gid) when the host runs as root. As root an agent can leave its cgroup and change anything on the machine; as a plain user it cannot leave its cgroup. The user needs access to `command`, `cwd` and whatever the agent reads (set `env.HOME` to a directory it owns). Off by default; see the README.'),
  mcpServers: Schema.array(Schema.any()).default([])
    .description('MCP servers passed to session/new, in ACP form: `{ name, command, args, env: [{ name, value }] }` (stdio) or `{ type: http | sse, name, url, headers: [{ name, value }] }`.'),
  sessionMeta: Schema.dict(Schema.any()).default({})
    .description('More `_meta` for `session/new` (and `session/load` / `session/resume`): the agent\'s own session options, e.g. claude-agent-acp\'s `{ claudeCode: { options: { … } } }`. The provider\'s own keys (`cordisSubagents`, `traceparent`, `tracestate`) are never taken from here. None by default.'),
  inheritMcpServers: Schema.boolean().default(false)
    .description('Also pass the MCP servers mounted in this app (`@cordis-subagents/mcp` loads, listed by `@cordis-subagents/mcp/servers`) whose every tool the parent\'s view allows.'),
  description: Schema.string()
    .description('Appended to the tool description the model sees, e.g. "Claude Code over ACP".'),
  warm: Schema.boolean().default(false)
    .description('Keep `spares` agent processes started and initialized ahead of need (after the first run shows which environment they need). Off by default; see the README.'),
  spares: count({ min: 1, max: 16 }).default(1)
    .description('With `warm`: how many initialized spare processes to keep ready.'),
  reuse: Schema.boolean().default(false)
    .description('Give a finished run\'s process back to a pool: the next run with the same cwd and environment opens a new session on it. Only for agents that keep sessions apart in one process; see the README for what is shared.'),
  maxSessionsPerProcess: count({ min: 1, max: 1000 }).default(16)
    .description('With `reuse`: sessions one process serves before it is stopped.'),
  maxProcesses: count({ min: 1, max: 256 }).default(4)
    .description('With `warm` or `reuse`: the pool never starts or keeps a process while this many agent processes of this provider (runs included) are alive. Runs themselves are capped by the subagents service.'),
  idleTimeout: duration({ min: 1, max: 24 * 3_600_000 }).default(60_000)
    .description('With `warm` or `reuse`: milliseconds an unused pooled or spare process is kept before it is stopped.'),
  maxSpareFailures: count({ min: 1, max: 100 }).default(3)
    .description('With `warm`: spares in a row that may fail to start (or die by themselves while waiting) before no more are started until a run starts a process successfully or the plugin is reloaded. Each failure doubles the wait before the next spare (0.5 s, 1 s, 2 s, … at most 30 s).'),
  resume: choice({
    off: 'Every delegation opens a new session',
    request: 'A delegation that asks (`resume: true` on the request) continues its parent\'s child session',
    'per-parent': 'Every delegation of a parent agent continues its child session (unless the request says `resume: false`)',
  }).default('off')
    .description('Continue a parent agent\'s earlier child session (session/load) when the agent advertises `loadSession`; otherwise a new session is opened. One session per parent agent, forgotten with the parent.'),
  context: choice({
    fresh: 'A fresh child: it sees only the prompt',
    fork: 'A fork child: it starts with the parent\'s completed turns (session/fork of the parent\'s kept session where the agent offers it, else seeded into the first prompt)',
  }).default('fresh')
    .description('What the child knows when it starts. `fork` makes this a fork provider: the tool tells the model the child already sees the conversation.'),
  maxSeedBytes: count({ min: 1024, max: 16 * 1024 * 1024 }).default(256 * 1024)
    .description('With `context: fork`: most UTF-8 bytes of the parent\'s turns put into a child\'s first prompt; the oldest turns are left out first.'),
})
