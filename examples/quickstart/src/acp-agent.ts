#!/usr/bin/env node
/**
 * An ACP agent process that serves one of OUR agents (ctx.agents + workspace tools + the demo
 * model, or model-openai when OPENAI_BASE_URL / OPENAI_API_KEY reach it) over the Agent Client
 * Protocol on stdin/stdout. provider-acp starts it as `node lib/acp-agent.js`.
 *
 * prompt → agent.run → agent_message_chunk / tool_call / tool_call_update notifications;
 * session/cancel → abort the turn; SUBAGENT_DEPTH sets the root depth (ctx.agents reads it).
 * A session works in its own cwd (absolute, an existing directory): the workspace tools are
 * confined to it. One turn at a time per session: a second prompt while one runs is refused and
 * leaves the running turn (and its cancel) alone. Sessions are stored (session-store.ts), so
 * `session/load` continues one in a later process, with its history replayed to the client.
 * The tool ceiling crosses the process boundary: SUBAGENT_ALLOWED_TOOLS (and session/new's
 * `_meta.cordisSubagents.allowedTools`) name the tools the delegating parent may use, and this
 * agent's tools are restricted to them. The remaining budget and depth ceiling of the delegating
 * tree come per session in `_meta.cordisSubagents` (and SUBAGENT_BUDGET / SUBAGENT_MAX_DEPTH for a
 * process of its own): the lowest of all applies. Usage goes back in ACP's field names, cumulative over
 * the session as ACP defines it (a client's second prompt in a session sees the sum).
 * The delegation's trace continues here: the W3C trace context of session/prompt's `_meta` (else
 * session/new's, else TRACEPARENT) parents this agent's spans, exported per tracing.ts.
 * stdout carries only protocol messages: logs go to stderr.
 */
import { stat } from 'node:fs/promises'
import { isAbsolute } from 'node:path'
import { Readable, Writable } from 'node:stream'
import { defaultStateDir, isSessionId, newSessionId, SessionStore } from './session-store.js'
import { startTracing } from './tracing.js'
import type {} from '@cordis-subagents/telemetry'
import { budgetOf, ceilingFrom, parentLimits, servedPersona, startAgentHost, underCeilings } from './agent-host.js'

// Everything that would print to stdout (cordis' logger uses console.log) goes to stderr.
console.log = console.error
console.info = console.error

const acp = await import('@agentclientprotocol/sdk')
const { traceContextFrom } = await import('@cordis-subagents/shared')
type Agent = import('@cordis-subagents/agent').Agent

const tracing = await startTracing('cordis-subagents-acp-agent')
const ctx = await startAgentHost(async (host) => {
  if (tracing) host.plugin((await import('@cordis-subagents/telemetry')).default, { tracerProvider: tracing.provider })
})

// ctx.agents takes the root depth from SUBAGENT_DEPTH (set by provider-acp), so depth counts
// continue across the process boundary.
const persona = (depth: number) => servedPersona('ACP', depth)

interface Session {
  agent: Agent
  cwd: string
  controller?: AbortController
  /** The trace context session/new carried (a prompt's own `_meta` wins). */
  trace?: { traceparent: string; tracestate?: string }
}

const store = new SessionStore(defaultStateDir())

/** A session's cwd must be an absolute path of an existing directory (ACP requires absolute). */
async function sessionCwd(cwd: unknown): Promise<string> {
  if (typeof cwd !== 'string' || !isAbsolute(cwd)) {
    throw acp.RequestError.invalidParams(undefined, `cwd must be an absolute path, got ${JSON.stringify(cwd)}`)
  }
  const info = await stat(cwd).catch(() => undefined)
  if (!info?.isDirectory()) throw acp.RequestError.invalidParams(undefined, `cwd ${cwd} is not an existing directory`)
  return cwd
}

function openSession(sessionId: string, cwd: string, meta: unknown, seed?: unknown[]) {
  const budget = sessionBudget(meta)
  const agent = ctx.agents.create({
    cwd, label: 'acp', persona: persona(ctx.agents.rootDepth), tools: sessionTools(meta), ...seed ? { seed: seed as any } : {},
    ...budget ? { budget } : {},
  })
  sessions.set(sessionId, { agent, cwd, trace: traceContextFrom(meta) })
}

async function persist(sessionId: string, session: Session) {
  try {
    const kept = await store.save(sessionId, { cwd: session.cwd, messages: session.agent.transcript.completedMessages() })
    if (!kept) console.error(`session ${sessionId} is too large to store; it cannot be loaded later`)
  } catch (error) {
    console.error(`session ${sessionId} could not be stored: ${error instanceof Error ? error.message : String(error)}`)
  }
}

/** The tools a session may use: the intersection of every ceiling given (env and `_meta`). */
function sessionTools(meta: unknown) {
  return underCeilings(ctx.tools.view(), ceilingFrom(process.env.SUBAGENT_ALLOWED_TOOLS), parentLimits(meta).allowedTools)
}

/**
 * The session's limits from session/new's `_meta.cordisSubagents` (`budget` and `maxDepth`):
 * provider-acp sends them per session, and only there for a pooled process that serves several
 * delegations. The runtime lowers root limits with them (SUBAGENT_BUDGET, when set, still applies).
 * Malformed entries are ignored: only non-negative safe integers count.
 */
function sessionBudget(meta: unknown): Record<string, number> | undefined {
  return budgetOf(parentLimits(meta))
}

const sessions = new Map<string, Session>()

/** Our stop reasons that are ACP stop reasons; `error` and `max-steps` are answered with a JSON-RPC error. */
const STOPS: Partial<Record<string, 'end_turn' | 'cancelled' | 'max_tokens' | 'refusal'>> = {
  completed: 'end_turn',
  aborted: 'cancelled',
  'max-tokens': 'max_tokens',
  refusal: 'refusal',
}

const app = acp.agent({ name: 'cordis-subagents-quickstart' })
  .onRequest(acp.methods.agent.initialize, async ({ params }) => ({
    protocolVersion: Math.min(params.protocolVersion, acp.PROTOCOL_VERSION),
    agentCapabilities: { loadSession: true },
    authMethods: [],
  }))
  .onRequest(acp.methods.agent.session.new, async ({ params }) => {
    const cwd = await sessionCwd(params.cwd)
    const sessionId = newSessionId()
    openSession(sessionId, cwd, params._meta)
    return { sessionId }
  })
  .onRequest(acp.methods.agent.session.load, async ({ params, client }) => {
    const cwd = await sessionCwd(params.cwd)
    if (!isSessionId(params.sessionId)) throw acp.RequestError.invalidParams(undefined, `cannot load session ${JSON.stringify(params.sessionId)}`)
    const open = sessions.get(params.sessionId)
    let messages: unknown[]
    if (open) {
      // Loading a session this process has open (a client that keeps the process, e.g. provider-acp's
      // reuse) continues it with the limits of the new `_meta`: the same history, a new agent.
      if (open.controller) throw acp.RequestError.invalidRequest(undefined, `session ${params.sessionId} is running a turn; wait for it or cancel it`)
      messages = open.agent.transcript.completedMessages()
      sessions.delete(params.sessionId)
      await open.agent.dispose()
    } else {
      let stored
      try {
        stored = await store.load(params.sessionId)
      } catch (error) {
        throw acp.RequestError.internalError(undefined, `session ${params.sessionId} cannot be loaded: ${error instanceof Error ? error.message : String(error)}`)
      }
      if (!stored) throw acp.RequestError.resourceNotFound(params.sessionId)
      messages = stored.messages
    }
    openSession(params.sessionId, cwd, params._meta, messages)
    // The protocol wants the conversation replayed to the client before the response.
    for (const message of sessions.get(params.sessionId)!.agent.transcript.messages) {
      const update = message.role === 'user'
        ? { sessionUpdate: 'user_message_chunk', content: { type: 'text', text: message.content } }
        : message.role === 'assistant' && message.content
          ? { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: message.content } }
          : undefined
      if (!update) continue
      await client.notify(acp.methods.client.session.update, { sessionId: params.sessionId, update: update as any }).catch(() => {})
    }
    return {}
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    sessions.get(params.sessionId)?.controller?.abort(new Error('cancelled by the client (session/cancel)'))
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const session = sessions.get(params.sessionId)
    if (!session) throw acp.RequestError.invalidParams(undefined, `unknown session ${params.sessionId}`)
    // One turn at a time: a second prompt must not take over the running turn's cancel.
    if (session.controller) throw acp.RequestError.invalidRequest(undefined, 'a turn is already running in this session; wait for it or send session/cancel')
    const prompt = params.prompt.map((block: any) => (block.type === 'text' ? block.text : '')).join('')
    const controller = new AbortController()
    session.controller = controller
    const notify = (update: any) => client.notify(acp.methods.client.session.update, { sessionId: params.sessionId, update })
      .catch(() => {})
    const pending: Promise<unknown>[] = []
    ctx.get('telemetry')?.continueTrace(session.agent, traceContextFrom(params._meta) ?? session.trace)
    try {
      const result = await session.agent.run(prompt, {
        signal: controller.signal,
        onEvent: (event) => {
          if (event.type === 'text') {
            pending.push(notify({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: event.text } }))
          } else if (event.type === 'tool-call') {
            pending.push(notify({
              sessionUpdate: 'tool_call', toolCallId: event.call.id, title: `${event.call.name} ${JSON.stringify(event.call.input)}`.slice(0, 200),
              kind: event.call.name === 'search_text' ? 'search' : 'read', status: 'in_progress',
            }))
          } else if (event.type === 'tool-result') {
            pending.push(notify({ sessionUpdate: 'tool_call_update', toolCallId: event.toolCallId, status: event.result.isError ? 'failed' : 'completed' }))
          }
        },
      })
      await Promise.all(pending)
      const stopReason = Object.hasOwn(STOPS, result.stopReason) ? STOPS[result.stopReason] : undefined
      // A failed turn (error, max-steps) is a JSON-RPC error, so the parent sees an `error` result with the diagnostic.
      if (!stopReason) throw acp.RequestError.internalError(undefined, result.diagnostic || `the agent's turn ended with ${result.stopReason}`)
      // ACP's (unstable) Usage is cumulative over the session ("across all turns"), so a client that
      // sends a second prompt (provider-acp's follow-ups) sees the sum: the session agent's total, not
      // this turn's. Field names are ACP's: cachedReadTokens, not our cachedInputTokens.
      const { inputTokens, outputTokens, cachedInputTokens } = session.agent.usage.total
      const cached = cachedInputTokens === undefined ? {} : { cachedReadTokens: cachedInputTokens }
      const usage = { totalTokens: inputTokens + outputTokens, inputTokens, outputTokens, ...cached }
      return { stopReason, usage } as any
    } finally {
      session.controller = undefined
      await persist(params.sessionId, session)
    }
  })

let stopping = false
async function shutdown(code = 0) {
  if (stopping) return
  stopping = true
  for (const session of sessions.values()) session.controller?.abort(new Error('agent shutting down'))
  await Promise.allSettled([...sessions.values()].map((s) => s.agent.dispose()))
  await ctx.stop().catch(() => {})
  await tracing?.shutdown()
  process.exit(code)
}

process.on('SIGTERM', () => void shutdown(0))
process.on('SIGINT', () => void shutdown(0))
const connection = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin) as any))
connection.closed.then(() => shutdown(0), () => shutdown(0))
