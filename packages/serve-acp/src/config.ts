import { Schema } from 'cordis'
import { count, duration, NAME_PATTERN, type ToolFilter, unsetGroup } from '@cordis-subagents/shared'
import type { BudgetLimits } from '@cordis-subagents/agent'
import { type ClientMcpConfig, DEFAULT_CLIENT_MCP } from './session-mcp.js'

export interface Config {
  /** `agentInfo.name` in the `initialize` response. */
  name: string
  /** `agentInfo.title`. */
  title?: string
  /** Model ref of each session's agent (default: ctx.agents' default). */
  model?: string
  /** System prompt of each session's agent; `{depth}` is replaced by the session's depth. */
  persona?: string
  /** Which of ctx.tools a session's agent may use (before any ceiling a parent sends). */
  tools?: ToolFilter
  /** Limits of each session's root run (lowered by the parent's remaining budget). */
  budget?: Pick<BudgetLimits, 'maxSteps' | 'maxTokens' | 'maxToolCalls' | 'maxWallMs' | 'maxChildren'>
  /** This server's own depth ceiling: a session deeper than it is refused. */
  maxDepth: number
  /** Live sessions kept in memory; beyond it the least recently used idle one is closed. */
  maxSessions: number
  /** Requests of the client handled at once (a running prompt counts); one more is refused TOO_MANY_REQUESTS. */
  maxRequestsInFlight: number
  /** Advertise and serve `session/load` from a session store. */
  loadSession: boolean
  /** Directory of the session store (default: `$XDG_STATE_HOME/cordis-subagents/serve-acp/sessions`). */
  store?: string
  /** Sessions kept in the store. */
  maxStoredSessions: number
  /** Largest stored session (bytes). */
  maxSessionBytes: number
  /** The model's context window, sent as `usage_update.size` (0 when unknown). */
  contextWindow?: number
  /** Largest prompt accepted (characters of text). */
  maxPromptChars: number
  /** What the MCP servers a client sends in `session/new` may do. */
  mcpServers: ClientMcpConfig
  /** At unload (or the app's stop): how long the aborted prompts' answers may take to be written before the stream ends anyway (ms). */
  closeGrace: number
  /** Programmatic only: the stream pair to serve on (default: the process's stdin/stdout). */
  transport?: AcpTransport
}

/** A web stream pair: what the client writes to us (`input`), what we write to it (`output`). */
export interface AcpTransport {
  input: ReadableStream<Uint8Array>
  output: WritableStream<Uint8Array>
}

/** Default `closeGrace` (ms). */
const DEFAULT_CLOSE_GRACE = 2_000

const NOT_BLANK = /\S/

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  name: Schema.string().pattern(NOT_BLANK).default('cordis-subagents').description('`agentInfo.name` in the `initialize` response (what an ACP client shows).'),
  title: Schema.string().pattern(NOT_BLANK).description('`agentInfo.title` in the `initialize` response.'),
  model: Schema.string().pattern(NOT_BLANK).description('Model ref (`name` or `name:modelId`) of each session\'s agent. Default: ctx.agents\' default model.'),
  persona: Schema.string().pattern(NOT_BLANK).role('textarea').description('System prompt of each session\'s agent; `{depth}` is replaced by the session\'s depth. Default: ctx.agents\' deployment persona.'),
  tools: unsetGroup(Schema.object({
    allow: unsetGroup(Schema.array(Schema.string().pattern(NAME_PATTERN))).description('Only these tools of ctx.tools are served.'),
    deny: unsetGroup(Schema.array(Schema.string().pattern(NAME_PATTERN))).description('These tools of ctx.tools are never served.'),
  })).description('Which tools a session\'s agent may use. A parent\'s tool ceiling (SUBAGENT_ALLOWED_TOOLS, `_meta`) narrows it further.'),
  budget: unsetGroup(Schema.object({
    maxSteps: count().description('Model calls of one prompt turn and everything below it.'),
    maxTokens: count().description('Tokens (input + output) of one prompt turn and everything below it.'),
    maxToolCalls: count().description('Tool calls of one prompt turn and everything below it.'),
    maxWallMs: count().description('Wall time of one prompt turn, children included (ms).'),
    maxChildren: count().description('Delegations below one prompt turn.'),
  })).description('Limits of each prompt turn (a session\'s root run). A parent\'s remaining budget (SUBAGENT_BUDGET, `_meta`) lowers them, never raises them.'),
  maxDepth: count().default(3).description('This server\'s depth ceiling: a session whose depth (SUBAGENT_DEPTH, `_meta`) is deeper is refused, and its children count against it.'),
  maxSessions: count({ min: 1, max: 10_000 }).default(16).description('Live sessions kept in memory. Beyond it the least recently used idle session is closed (still loadable from the store); when every session is running a turn, session/new is refused.'),
  maxRequestsInFlight: count({ min: 1, max: 100_000 }).default(256).description('Requests of the client handled at once (a running prompt counts for its whole turn); one more is answered at once with TOO_MANY_REQUESTS. Raise it with maxSessions when more turns run at once.'),
  loadSession: Schema.boolean().default(true).description('Advertise `loadSession` and keep sessions in a store, so `session/load` continues one in a later process.'),
  store: Schema.string().pattern(NOT_BLANK).description('Directory of the session store. Default: `$XDG_STATE_HOME/cordis-subagents/serve-acp/sessions` (else `~/.local/state/…`).'),
  maxStoredSessions: count({ min: 1, max: 100_000 }).default(100).description('Sessions kept in the store; saving one more removes the least recently saved.'),
  maxSessionBytes: count({ min: 1024 }).default(4 * 1024 * 1024).description('Largest stored session (bytes of JSON); a larger one is not stored (the live session goes on).'),
  contextWindow: count({ min: 1 }).description('The model\'s context window in tokens, sent as `size` of each `usage_update`. Omitted: `size` is 0 (unknown).'),
  maxPromptChars: count({ min: 1 }).default(1024 * 1024).description('Largest prompt text accepted (characters); a longer session/prompt is refused.'),
  mcpServers: Schema.object({
    stdio: Schema.boolean().default(DEFAULT_CLIENT_MCP.stdio).description('Start the stdio MCP servers a client sends (a command on this host).'),
    http: Schema.boolean().default(DEFAULT_CLIENT_MCP.http).description('Connect to the Streamable HTTP MCP servers a client sends.'),
    maxServers: count({ max: 64 }).default(DEFAULT_CLIENT_MCP.maxServers).description('MCP servers one session may send; 0 refuses any.'),
    commands: unsetGroup(Schema.array(Schema.string().pattern(NOT_BLANK))).description('The only commands a client\'s stdio server may run (exactly as sent, e.g. npx). Omit for any.'),
    inherit: Schema.union(['core', 'all', 'none']).default(DEFAULT_CLIENT_MCP.inherit).description('Which host variables a client\'s stdio server inherits (as @cordis-subagents/mcp\'s inherit); credentials never are.'),
    startupTimeout: duration({ min: 1 }).default(DEFAULT_CLIENT_MCP.startupTimeout).description('Milliseconds for one of them to start and list its tools.'),
    callTimeout: duration({ min: 1 }).default(DEFAULT_CLIENT_MCP.callTimeout).description('Milliseconds one call of their tools may take.'),
  }).default({} as never).description('The MCP servers an ACP client sends with session/new (Zed\'s context servers): started per session, their tools for that session\'s agent only.'),
  closeGrace: duration({ max: 60_000 }).default(DEFAULT_CLOSE_GRACE).description('At unload (or the app\'s stop), the running turns are aborted and their prompts answered `cancelled`: how long (ms) those answers may take to be written and read before the stream ends anyway.'),
  transport: Schema.any().hidden().description('Programmatic only: `{ input, output }` web streams to serve on. Default: the process\'s stdin and stdout.'),
})
