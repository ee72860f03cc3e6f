import { Schema } from 'cordis'
import type { BudgetLimits } from '@cordis-subagents/agent'
import { choice, count, duration, unsetGroup } from '@cordis-subagents/shared'

export interface Config {
  transport: 'stdio' | 'http'
  tools: string[]
  model?: string
  persona?: string
  cwd?: string
  toolFilter?: { allow?: string[]; deny?: string[] }
  host?: string
  allowRemote?: boolean
  port?: number
  path?: string
  token?: string
  allowedHosts?: string[]
  allowedOrigins?: string[]
  maxBodyBytes?: number
  bodyTimeout?: number
  maxConnections?: number
  maxSessions?: number
  sessionIdleTimeout?: number
  maxRequestsPerMinute?: number
  maxConcurrentCalls?: number
  maxDepth?: number
  budget?: Pick<BudgetLimits, 'maxSteps' | 'maxTokens' | 'maxToolCalls' | 'maxWallMs' | 'maxChildren'>
  taskSupport?: 'optional' | 'required' | 'forbidden'
  maxTasks?: number
  taskTtl?: number
}

export const Config: Schema<Config> = Schema.object({
  transport: choice({ stdio: 'This process\'s stdin/stdout (the `cordis-subagents-mcp` bin)', http: 'Streamable HTTP on host:port' })
    .default('http').description('How MCP clients reach the served tools.'),
  tools: Schema.array(String).default(['subagent'])
    .description('Tools of ctx.tools served as MCP tools, by name (e.g. subagent, subagent_acp, subagent_wait). A name not registered (yet) is simply not listed.'),
  model: Schema.string().description('Model of the root agent each MCP session gets (the parent of its delegations). Default: the runtime\'s default model.'),
  persona: Schema.string().description('Persona of that root agent.'),
  cwd: Schema.string().description('Working directory of that root agent (absolute, or relative to the app directory).'),
  toolFilter: unsetGroup(Schema.object({
    allow: unsetGroup(Schema.array(String)),
    deny: unsetGroup(Schema.array(String)),
  })).description('The root agent\'s tool view: the ceiling of every child it delegates to. Default: every tool.'),
  host: Schema.string().default('127.0.0.1').description('HTTP: the address to bind. Loopback by default; another address needs `allowRemote`.'),
  allowRemote: Schema.boolean().default(false).description('HTTP: allow a non-loopback `host` (the bearer token then crosses the network in clear text unless TLS is in front). Without it such a bind fails the load.'),
  port: Schema.natural().max(65535).default(0).description('HTTP: the port (0: any free port, see ctx.mcpServe.url).'),
  path: Schema.string().pattern(/^\/[A-Za-z0-9/_-]{0,64}$/).default('/mcp').description('HTTP: the endpoint path.'),
  token: Schema.string().role('secret').description('HTTP: the bearer token clients must send. Default: a random token generated per start (ctx.mcpServe.token).'),
  allowedHosts: Schema.array(String).default([])
    .description('HTTP: more accepted Host headers (host:port), beside 127.0.0.1, localhost and [::1] on the bound port.'),
  allowedOrigins: Schema.array(String).default([])
    .description('HTTP: more Origins accepted from browsers (exact, e.g. http://localhost:6274), beside this server\'s own loopback origin. A request with any other Origin is refused.'),
  maxBodyBytes: count({ min: 1024, max: 64 * 1024 * 1024 }).default(1024 * 1024).description('HTTP: largest request body (bytes).'),
  bodyTimeout: duration({ min: 1000, max: 10 * 60_000 }).default(60_000)
    .description('HTTP: ms a request\'s body has to arrive in full once its headers are in; a slower one is answered 408 (MCP_SERVE_BODY_TIMEOUT) '
      + 'and its connection closed. Headers get the lesser of this and 30 s, an idle keep-alive connection the lesser of this and 5 s. '
      + 'A response being streamed (SSE) is not cut by any of them.'),
  maxConnections: count({ min: 1, max: 65_536 }).default(1024)
    .description('HTTP: open TCP connections at once (idle, half-open or streaming); a connection past it is closed as it arrives.'),
  maxSessions: count({ min: 1, max: 10_000 }).default(16).description('HTTP: most live MCP sessions; the least recently used idle one is closed for a new one, else 503.'),
  sessionIdleTimeout: duration({ min: 1000 }).default(30 * 60_000).description('HTTP: a session unused this long (ms) is closed.'),
  maxRequestsPerMinute: count({ min: 1 }).default(600).description('HTTP: requests accepted per minute (all clients); more get 429.'),
  maxConcurrentCalls: count({ min: 1, max: 1024 }).default(8).description('Tool calls running at once per session; more are answered with an error.'),
  maxDepth: count().description('This server\'s depth ceiling: when the depth a parent host passed (SUBAGENT_DEPTH) is deeper, every call is refused, and delegations count against it. A parent\'s SUBAGENT_MAX_DEPTH applies too; the lower wins.'),
  budget: unsetGroup(Schema.object({
    maxSteps: count().description('Model calls of one call\'s whole tree.'),
    maxTokens: count().description('Tokens (input + output) of one call\'s whole tree.'),
    maxToolCalls: count().description('Tool calls of one call\'s whole tree, the served call included.'),
    maxWallMs: count().description('Wall time of one call (ms).'),
    maxChildren: count().description('Delegations of one call\'s whole tree.'),
  })).description('Limits of each call (its root run and every delegation below it; every call gets them afresh). A parent\'s remaining budget (SUBAGENT_BUDGET) lowers them, never raises them, and is spent across the calls.'),
  taskSupport: choice({
    optional: 'A client may ask for an MCP task (tasks/get, tasks/result, tasks/cancel) or call plainly',
    required: 'Calls must ask for a task; a plain call is refused (MCP_SERVE_TASK_REQUIRED)',
    forbidden: 'No MCP tasks: every call is plain',
  }).default('optional').description('MCP tasks (2025-11-25): whether a served call may run as a task the client polls.'),
  maxTasks: count({ min: 1, max: 1024 }).default(16)
    .description('Tasks one session holds (working, or finished and kept for their TTL); a new one pushes out the oldest finished one, and when all work it is refused (MCP_SERVE_TOO_MANY_TASKS).'),
  taskTtl: duration({ min: 1000 }).default(60 * 60_000)
    .description('The longest a task and its result are kept, counted from its creation (ms); a client\'s shorter ttl is honoured. A task still working then is cancelled.'),
})
