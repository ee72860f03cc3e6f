import { Schema } from 'cordis'
import type { SigningConfig } from './card-signing.js'
import { choice, count, duration, NAME_PATTERN, type ToolFilter } from '@cordis-subagents/shared'

export type AuthMode = 'bearer' | 'api-key' | 'none'

interface BudgetConfig {
  maxSteps?: number
  maxTokens?: number
  maxToolCalls?: number
  maxWallMs?: number
  maxChildren?: number
}

interface SkillConfig {
  id: string
  name: string
  description: string
  tags?: string[]
  examples?: string[]
}

/** Plugin config; the schema fills every default. */
export interface Config {
  host: string
  allowRemote: boolean
  port: number
  publicUrl?: string
  auth: AuthMode
  tokens: string[]
  tokensFromEnv: string[]
  apiKeyHeader: string
  allowedHosts?: string[]
  allowedOrigins?: string[]
  maxConcurrentTasks: number
  maxTasksPerCredential?: number
  maxStoredTasks: number
  taskTtl: number
  maxHistoryBytes: number
  maxFollowUpsPerTask: number
  maxParkedTasks: number
  parkedTimeout: number
  askParent: boolean
  askParentTool: string
  maxBodyBytes: number
  rateLimit: number
  maxSubscriptions: number
  maxSubscriptionsPerCredential: number
  maxSubscriptionsPerTask: number
  maxConnections: number
  requestTimeout: number
  model?: string
  persona?: string
  cwd?: string
  tools?: ToolFilter
  budget?: BudgetConfig
  maxDepth?: number
  name: string
  description: string
  skills: SkillConfig[]
  shared?: SharedConfig
  signing?: SigningConfig
  push: PushConfig
}

/** Push notifications to the webhooks clients set (push-sender.ts). */
interface PushConfig {
  enabled: boolean
  allowHosts: string[]
  allowHttp: boolean
  timeout: number
  retries: number
  retryDelay: number
  maxBodyBytes: number
  maxConfigsPerTask: number
  maxQueued: number
}

/** The shared task state of several hosts behind one load balancer (PostgreSQL; shared-store.ts). */
export interface SharedConfig {
  url?: string
  urlFromEnv?: string
  schema: string
  hostName: string
  leaseMs: number
  poolSize: number
  cancelWaitMs: number
}

const limit = (text: string) => count().description(text)

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  host: Schema.string().default('127.0.0.1')
    .description('Address to bind. Default loopback (127.0.0.1): only this machine can connect. Another address (0.0.0.0, a LAN address) exposes the agent to the network: it needs `allowRemote` and a credential (`auth` bearer or api-key); put TLS in front (a reverse proxy) and set `publicUrl`.'),
  allowRemote: Schema.boolean().default(false)
    .description('Allow a non-loopback `host` (the credential then crosses the network in clear text unless TLS is in front). Without it such a bind fails the load.'),
  port: Schema.natural().max(65535).default(0)
    .description('Port to listen on. 0 (the default) picks a free port at each start; read it from the service (`a2aServer.url`).'),
  publicUrl: Schema.string()
    .description('The base URL clients use when a reverse proxy is in front (`https://agents.example.com/quick`). The agent card advertises it instead of the bound address, and its host is allowed in `Host`.'),
  auth: choice({
    bearer: 'Bearer token: `Authorization: Bearer <token>`',
    'api-key': 'API key in a header (`apiKeyHeader`)',
    none: 'No credential (only on a loopback bind; logs a warning)',
  }).default('bearer')
    .description('What every JSON-RPC request must carry. With no token configured, one random token is generated per start and exposed as `a2aServer.token`.'),
  tokens: Schema.array(Schema.string().role('secret')).default([])
    .description('Accepted tokens (bearer) or keys (api-key). Each is its own credential: it sees, resubscribes to and cancels only the tasks it started. Never logged.'),
  tokensFromEnv: Schema.array(Schema.string()).default([])
    .description('Names of environment variables holding more accepted tokens or keys. A variable that is not set fails the load (naming the variable, never a value).'),
  apiKeyHeader: Schema.string().pattern(/^[A-Za-z0-9-]{1,64}$/).default('X-API-Key')
    .description('The header carrying the key when `auth: api-key`.'),
  allowedHosts: Schema.array(Schema.string())
    .description('Accepted `Host` headers (`host:port`). Default: on a loopback bind `127.0.0.1:<port>`, `localhost:<port>` and `[::1]:<port>`; otherwise the bound `host:port`; plus the host of `publicUrl`. Any other Host is refused (DNS rebinding). Empty: the default.'),
  allowedOrigins: Schema.array(Schema.string())
    .description('Accepted `Origin` headers (a request without one, as servers send, passes). Default: `http://` + each allowed host, plus the origin of `publicUrl`. Any other Origin is refused (a web page in a browser). Empty: the default.'),
  maxConcurrentTasks: count({ min: 1 }).default(8)
    .description('Tasks running at once on this server, across credentials. More are refused (HTTP 429, TOO_MANY_TASKS).'),
  maxTasksPerCredential: count({ min: 1 })
    .description('Tasks running at once for one credential. Default: `maxConcurrentTasks`.'),
  maxStoredTasks: count({ min: 1 }).default(500)
    .description('Tasks kept for GetTask / ListTasks, across credentials. Past it the oldest finished task is evicted. At least `maxConcurrentTasks`.'),
  taskTtl: duration({ min: 1000 }).default(15 * 60_000)
    .description('Milliseconds a finished task is kept after its last update; then it is evicted (GetTask answers task not found).'),
  maxHistoryBytes: count({ min: 16 * 1024, max: 64 * 1024 * 1024 }).default(1024 * 1024)
    .description('Bytes of one task\'s kept history (its messages as JSON). Past it the oldest messages are trimmed, and a marker message first in the history says how many; the newest message always stays.'),
  maxFollowUpsPerTask: count({ min: 1, max: 256 }).default(4)
    .description('Messages on one task in flight at once (an answer, or messages sent while its turn runs: each waits for the turn to end). More are refused (TOO_MANY_FOLLOW_UPS).'),
  maxParkedTasks: count({ min: 1 }).default(64)
    .description('Tasks waiting for an answer at once on this server (their agent asked a question: input-required), across credentials; each keeps its agent in memory. A turn that would park past it ends the task failed (TOO_MANY_PARKED).'),
  parkedTimeout: duration().default(24 * 3_600_000)
    .description('Milliseconds a task waits for its answer before it is cancelled and its agent disposed; 0: no limit. The agent\'s wall-clock budget does not run meanwhile.'),
  askParent: Schema.boolean().default(false)
    .description('Give the served agent an ask tool (`askParentTool` of @cordis-subagents/agent): calling it parks the task on a question (input-required) for the client; the client\'s next message on the task is the answer.'),
  askParentTool: Schema.string().pattern(NAME_PATTERN).default('ask_parent')
    .description('Name of the ask tool (with `askParent`). It shadows a registered tool of the same name for the served agent.'),
  maxBodyBytes: count({ min: 1024, max: 64 * 1024 * 1024 }).default(1024 * 1024)
    .description('Largest request body in bytes; a bigger one is refused (HTTP 413, BODY_TOO_LARGE) before it is parsed.'),
  rateLimit: count({ min: 1 }).default(600)
    .description('Requests per minute per credential (a sliding minute). More are refused (HTTP 429, RATE_LIMITED).'),
  maxSubscriptions: count({ min: 1 }).default(256)
    .description('Open SubscribeToTask streams (0.3: tasks/resubscribe) at once on this server, across credentials; each may stay open while its task waits (up to `parkedTimeout`). More are refused (HTTP 429, TOO_MANY_SUBSCRIPTIONS).'),
  maxSubscriptionsPerCredential: count({ min: 1 }).default(64)
    .description('Open SubscribeToTask streams of one credential at once.'),
  maxSubscriptionsPerTask: count({ min: 1 }).default(8)
    .description('Open SubscribeToTask streams on one task at once.'),
  maxConnections: count({ min: 1, max: 65_536 }).default(1024)
    .description('Open TCP connections at once (idle, half-open or streaming); a connection past it is closed as it arrives.'),
  requestTimeout: duration({ min: 1000, max: 10 * 60_000 }).default(60_000)
    .description('Milliseconds a client has to send a whole request (headers within the lesser of this and 30 s); a slower one is answered 408 and closed. Streams being answered are not cut by it.'),
  model: Schema.string().description('Model ref of the served agent (default: the runtime\'s default model).'),
  persona: Schema.string().role('textarea').description('System prompt of the served agent (default: the runtime\'s deployment persona). `{depth}` is replaced by the depth the task runs at (sent by a delegating parent; else this host\'s root depth).'),
  cwd: Schema.string().description('Working directory of the served agent (default: the runtime\'s).'),
  tools: Schema.object({
    allow: Schema.array(Schema.string()).description('Only these tools (empty or absent: every tool).'),
    deny: Schema.array(Schema.string()).description('Never these tools.'),
  }).description('Which registered tools the served agent may use (default: all). A delegating parent\'s tool ceiling narrows it further, never widens it.'),
  budget: Schema.object({
    maxSteps: limit('Model calls of one task\'s whole tree.'),
    maxTokens: limit('Tokens (input + output) of one task\'s whole tree.'),
    maxToolCalls: limit('Tool calls of one task\'s whole tree.'),
    maxWallMs: limit('Wall time of one task (ms).'),
    maxChildren: limit('Delegations of one task\'s tree.'),
  }).description('Limits of each task\'s root run. The budget a delegating parent sends lowers them, never raises them.'),
  maxDepth: count().description('This server\'s own depth ceiling: a task whose parent says it runs deeper is refused (rejected). A parent\'s `maxDepth` applies too; the lower wins.'),
  name: Schema.string().default('cordis agent').description('The agent card\'s name.'),
  description: Schema.string().default('An agent served by @cordis-subagents/serve-a2a.').description('The agent card\'s description.'),
  skills: Schema.array(Schema.object({
    id: Schema.string().required(),
    name: Schema.string().required(),
    description: Schema.string().required(),
    tags: Schema.array(Schema.string()).default([]),
    examples: Schema.array(Schema.string()).default([]),
  })).default([]).description('The agent card\'s skills (default: one `general` skill named after the card).'),
  shared: Schema.object({
    url: Schema.string().role('secret').description('PostgreSQL connection URL (`postgres://user:password@host:5432/db`). Prefer `urlFromEnv`: a URL holds a password.'),
    urlFromEnv: Schema.string().description('Name of an environment variable holding the connection URL. A variable that is not set fails the load.'),
    schema: Schema.string().pattern(/^[a-z_][a-z0-9_]{0,40}$/).default('public').description('PostgreSQL schema of the tables (`a2a_tasks`, `a2a_hosts`); also names the notification channels, so deployments sharing a database do not hear each other.'),
    hostName: Schema.string().pattern(/^[A-Za-z0-9_.-]{1,64}$/).default('a2a-host').description('This host\'s name in leases, logs and the status of a task it lost (give each host its own).'),
    leaseMs: duration({ min: 1000, max: 10 * 60_000 }).default(15_000).description('How long a host\'s lease lasts without renewal (renewed every third of it). A host that dies is seen at once (its database session ends); one that hangs is seen when its lease runs out, and its tasks are then interrupted.'),
    poolSize: count({ min: 1, max: 64 }).default(4).description('Connections of this host\'s pool for queries (one more listens for notifications, one more holds its liveness lock).'),
    cancelWaitMs: duration({ min: 100, max: 10 * 60_000 }).default(10_000).description('How long a cancel forwarded to the host running the task waits for it to end.'),
  }).description('Shared task state: with it, the tasks and their events live in PostgreSQL, so any host behind a load balancer answers GetTask, resubscribe and cancel for any task (README: Scale out). Without it, tasks live in this process.'),
  signing: Schema.object({
    key: Schema.string().role('secret').description('The private key the agent card is signed with: a PKCS#8 PEM or a private JWK (JSON); EC P-256/384/521, Ed25519 or RSA. Prefer `keyFromEnv`. Never logged.'),
    keyFromEnv: Schema.string().description('Name of an environment variable holding the key. A variable that is not set fails the load.'),
    kid: Schema.string().description('The key id put in the signature\'s protected header: a verifier picks its public key by it.'),
    jku: Schema.string().description('Where the public keys are published (a JWKS URL), put in the protected header as `jku`.'),
  }).description('Sign the agent card (JWS over the canonical card, A2A 1.0 `AgentCardSignature`) so clients holding the public key (`a2aServer.cardPublicJwk`) can check it came from you. Without it the card is unsigned.'),
  push: Schema.object({
    enabled: Schema.boolean().default(false).description('Offer push notifications (the card says `pushNotifications: true`): a client may give a webhook with a message (`taskPushNotificationConfig`) or set one on its task, and every update of the task is POSTed there.'),
    allowHosts: Schema.array(Schema.string()).default([]).description('Host names and IP addresses a webhook may reach although private, loopback, link-local or unique-local (e.g. `127.0.0.1` for a receiver on this machine). Any other webhook host must resolve only to public addresses.'),
    allowHttp: Schema.boolean().default(false).description('Allow plain http:// webhooks (the update and the client\'s token then cross the network in clear text).'),
    timeout: duration({ min: 100, max: 60_000 }).default(5_000).description('Milliseconds for one POST (connect and answer headers).'),
    retries: count({ max: 10 }).default(2).description('Retries of a POST that failed on the network, with HTTP 408, 429 or 5xx (redirects and other answers are not retried).'),
    retryDelay: duration({ min: 10, max: 60_000 }).default(500).description('Milliseconds before the first retry; doubles with each.'),
    maxBodyBytes: count({ min: 1024, max: 16 * 1024 * 1024 }).default(1024 * 1024).description('Largest notification body; a larger one is not sent (PUSH_TOO_LARGE).'),
    maxConfigsPerTask: count({ min: 1, max: 64 }).default(4).description('Webhooks one task may have; more are refused (TOO_MANY_PUSH_CONFIGS).'),
    maxQueued: count({ min: 2, max: 1024 }).default(64).description('Updates waiting per webhook: past it, and after a delivery failed all its retries, the waiting status and artifact updates of the task merge into one snapshot of its latest state (PUSH_COALESCED); an update in a state the task stops in is always kept.'),
  }).description('Push notifications (A2A TaskPushNotificationConfig) to the webhooks clients set, through an SSRF guard.'),
})
