#!/usr/bin/env node
/**
 * An ACP agent process that serves one of OUR agents (ctx.agents + workspace tools + the demo
 * model, or model-openai when OPENAI_BASE_URL / OPENAI_API_KEY reach it) over the Agent Client
 * Protocol on stdin/stdout. provider-acp starts it as `node lib/acp-agent.js`.
 *
 * prompt → agent.run → agent_message_chunk / tool_call / tool_call_update notifications;
 * session/cancel → abort the turn; SUBAGENT_DEPTH sets the root depth (ctx.agents reads it).
 * The tool ceiling crosses the process boundary: SUBAGENT_ALLOWED_TOOLS (and session/new's
 * `_meta.cordisSubagents.allowedTools`) name the tools the delegating parent may use, and this
 * agent's tools are restricted to them. Usage goes back in ACP's field names.
 * stdout carries only protocol messages: logs go to stderr.
 */
import { Readable, Writable } from 'node:stream'

// Everything that would print to stdout (cordis' logger uses console.log) goes to stderr.
console.log = console.error
console.info = console.error

const [{ Context }, acp, { default: ToolRegistry }, agentModule, demoModel, workspaceTools] = await Promise.all([
  import('cordis'),
  import('@agentclientprotocol/sdk'),
  import('@cordis-subagents/tools'),
  import('@cordis-subagents/agent'),
  import('./demo-model.js'),
  import('./workspace-tools.js'),
])
const { default: AgentRuntime } = agentModule
type Agent = InstanceType<typeof agentModule.Agent>

const useOpenAI = !!(process.env.OPENAI_API_KEY || process.env.OPENAI_BASE_URL)

const ctx = new Context()
ctx.plugin(ToolRegistry)
ctx.plugin(AgentRuntime, {
  model: useOpenAI ? 'openai' : 'demo',
})
if (useOpenAI) ctx.plugin(await import('@cordis-subagents/model-openai'), { name: 'openai' })
else ctx.plugin(demoModel, { name: 'demo' })
ctx.plugin(workspaceTools, {} as any)
await ctx.start()
await ctx.lifecycle.flush()

// ctx.agents takes the root depth from SUBAGENT_DEPTH (set by provider-acp), so depth counts
// continue across the process boundary.
const persona = (depth: number) => `You are a read-only research agent working in a code workspace, reached over ACP at depth ${depth}. Use the tools to look at files and answer concisely from what you read.`

interface Session {
  agent: Agent
  controller?: AbortController
}

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/

/** A ceiling from the parent: a list of tool names, or undefined when none was given. */
function ceilingFrom(value: unknown): string[] | undefined {
  if (typeof value === 'string') return value.split(',').filter((name) => TOOL_NAME.test(name))
  if (Array.isArray(value)) return value.filter((name): name is string => typeof name === 'string' && TOOL_NAME.test(name))
  return undefined
}

/** The tools a session may use: the intersection of every ceiling given (env and `_meta`). */
function sessionTools(meta: unknown) {
  const fromMeta = ceilingFrom((meta as { cordisSubagents?: { allowedTools?: unknown } } | null | undefined)?.cordisSubagents?.allowedTools)
  const fromEnv = ceilingFrom(process.env.SUBAGENT_ALLOWED_TOOLS)
  let view = ctx.tools.view()
  for (const allow of [fromEnv, fromMeta]) if (allow) view = view.restrict({ allow })
  return view
}
const sessions = new Map<string, Session>()
let counter = 0

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
    agentCapabilities: { loadSession: false },
    authMethods: [],
  }))
  .onRequest(acp.methods.agent.session.new, async ({ params }) => {
    const sessionId = `session-${process.pid}-${++counter}`
    sessions.set(sessionId, {
      agent: ctx.agents.create({ cwd: params.cwd, label: 'acp', persona: persona(ctx.agents.rootDepth), tools: sessionTools(params._meta) }),
    })
    return { sessionId }
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    sessions.get(params.sessionId)?.controller?.abort(new Error('cancelled by the client (session/cancel)'))
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const session = sessions.get(params.sessionId)
    if (!session) throw acp.RequestError.invalidParams(undefined, `unknown session ${params.sessionId}`)
    const prompt = params.prompt.map((block: any) => (block.type === 'text' ? block.text : '')).join('')
    const controller = new AbortController()
    session.controller = controller
    const notify = (update: any) => client.notify(acp.methods.client.session.update, { sessionId: params.sessionId, update }).catch(() => {})
    const pending: Promise<unknown>[] = []
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
      // ACP's (unstable) Usage field names: cachedReadTokens, not our cachedInputTokens.
      const { inputTokens, outputTokens, cachedInputTokens } = result.usage
      const usage = { totalTokens: inputTokens + outputTokens, inputTokens, outputTokens, ...cachedInputTokens === undefined ? {} : { cachedReadTokens: cachedInputTokens } }
      return { stopReason, usage } as any
    } finally {
      session.controller = undefined
    }
  })

let stopping = false
async function shutdown(code = 0) {
  if (stopping) return
  stopping = true
  for (const session of sessions.values()) session.controller?.abort(new Error('agent shutting down'))
  await Promise.allSettled([...sessions.values()].map((s) => s.agent.dispose()))
  await ctx.stop().catch(() => {})
  process.exit(code)
}

process.on('SIGTERM', () => void shutdown(0))
process.on('SIGINT', () => void shutdown(0))
const connection = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin) as any))
connection.closed.then(() => shutdown(0), () => shutdown(0))
