#!/usr/bin/env node
/**
 * The quick start's agent served over A2A (Agent2Agent, @a2a-js/sdk's server side on express):
 * `node lib/a2a-server.js [--port 0] [--root dir]` listens on 127.0.0.1 only, serves its agent
 * card at /.well-known/agent-card.json (streaming: true) and JSON-RPC at /a2a/jsonrpc, and prints
 * one line `{"url":"http://127.0.0.1:PORT"}` on stdout once it listens (logs go to stderr).
 *
 * Each task runs one of OUR agents (agent-host.ts: the demo model or model-openai, the workspace
 * tools confined to --root) and streams its progress as status updates; the answer is the task's
 * artifact. A delegating parent of ours sends `metadata.cordisSubagents` (provider-a2a): the
 * task is refused (rejected) when its depth is over the ceiling (the parent's `maxDepth`, and this
 * server's own SUBAGENT_MAX_DEPTH / --max-depth), the agent's tools are restricted to
 * `allowedTools`, and its run is bounded by `budget`. A budget or a failure ends the task failed,
 * with our stop reason and usage in the final status's `metadata.cordisSubagents`.
 * CancelTask aborts the run. At most --max-tasks tasks run at once; more are rejected.
 * With --exit-with-stdin it exits when its stdin ends (the a2a-host plugin's process died).
 */
import { randomUUID } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import type {} from '@cordis-subagents/telemetry'
import { budgetOf, ceilingFrom, parentLimits, servedPersona, startAgentHost, underCeilings } from './agent-host.js'
import { startTracing } from './tracing.js'

// stdout carries only the one "listening" line: cordis' logger (console.log) goes to stderr.
console.log = console.error
console.info = console.error

const { values: args } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    root: { type: 'string' },
    'max-depth': { type: 'string' },
    'max-tasks': { type: 'string', default: '8' },
    'exit-with-stdin': { type: 'boolean', default: false },
  },
})
const port = Number(args.port)
const maxTasks = Number(args['max-tasks'])
const ownCeiling = depthOf(args['max-depth'] ?? process.env.SUBAGENT_MAX_DEPTH)
const root = resolve(args.root ?? process.cwd())
if (!Number.isSafeInteger(port) || port < 0 || port > 65535) fail(`--port must be 0-65535, got ${args.port}`)
if (!Number.isSafeInteger(maxTasks) || maxTasks < 1) fail(`--max-tasks must be a positive integer, got ${args['max-tasks']}`)

const [{ default: express }, { Role, TaskState }, server, { agentCardHandler, jsonRpcHandler, UserBuilder }] = await Promise.all([
  import('express'),
  import('@a2a-js/sdk'),
  import('@a2a-js/sdk/server'),
  import('@a2a-js/sdk/server/express'),
])
type Bus = import('@a2a-js/sdk/server').ExecutionEventBus
type Context = import('@a2a-js/sdk/server').RequestContext
type State = import('@a2a-js/sdk').TaskState

const { traceContextFrom } = await import('@cordis-subagents/shared')
// With an OTLP endpoint (or QUICKSTART_TRACE_FILE), a task continues the trace of the delegating
// call (provider-a2a sends it in metadata.cordisSubagents), as the ACP agent does.
const tracing = await startTracing('cordis-subagents-a2a-server')
const ctx = await startAgentHost(async (host) => {
  if (tracing) host.plugin((await import('@cordis-subagents/telemetry')).default, { tracerProvider: tracing.provider })
})
const running = new Map<string, AbortController>()

const STATES: Record<string, State> = {
  completed: TaskState.TASK_STATE_COMPLETED,
  aborted: TaskState.TASK_STATE_CANCELED,
}

const executor: import('@a2a-js/sdk/server').AgentExecutor = {
  async execute(request: Context, bus: Bus) {
    const { taskId, contextId } = request
    const message = (text: string) => ({
      messageId: randomUUID(), contextId, taskId, role: Role.ROLE_AGENT,
      parts: [{ content: { $case: 'text' as const, value: text }, mediaType: 'text/plain', filename: '', metadata: undefined }],
      metadata: undefined, extensions: [], referenceTaskIds: [],
    })
    const status = (state: State, text?: string, metadata?: Record<string, unknown>) => bus.publish(server.AgentEvent.statusUpdate({
      taskId, contextId, metadata,
      status: { state, message: text === undefined ? undefined : message(text), timestamp: new Date().toISOString() },
    }))
    bus.publish(server.AgentEvent.task({
      id: taskId, contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: undefined },
      artifacts: [], history: [], metadata: undefined,
    }))
    const refusal = refuse(request)
    if (refusal) {
      status(TaskState.TASK_STATE_REJECTED, refusal, { cordisSubagents: { stopReason: 'error' } })
      bus.finished()
      return
    }
    const limits = parentLimits(request.userMessage.metadata)
    const depth = limits.depth ?? ctx.agents.rootDepth
    const budget = budgetOf({ ...limits, maxDepth: undefined })
    const agent = ctx.agents.create({
      cwd: root, label: 'a2a', persona: servedPersona('A2A', depth),
      tools: underCeilings(ctx.tools.view(), ceilingFrom(process.env.SUBAGENT_ALLOWED_TOOLS), limits.allowedTools),
      ...budget ? { budget } : {},
    })
    const crossing = (request.userMessage.metadata as { cordisSubagents?: unknown } | undefined)?.cordisSubagents
    ctx.get('telemetry')?.continueTrace(agent, traceContextFrom(crossing))
    const controller = new AbortController()
    running.set(taskId, controller)
    try {
      status(TaskState.TASK_STATE_WORKING)
      const prompt = request.userMessage.parts.map((part) => part.content?.$case === 'text' ? part.content.value : '').join('')
      const result = await agent.run(prompt, {
        signal: controller.signal,
        onEvent: (event) => {
          if (event.type === 'tool-call') {
            const update = { kind: 'tool-call', tool: event.call.name, step: event.step }
            status(TaskState.TASK_STATE_WORKING, `calls ${event.call.name}`, { cordisSubagents: { update } })
          } else if (event.type === 'tool-result' && event.result.isError) {
            status(TaskState.TASK_STATE_WORKING, 'a tool failed', { cordisSubagents: { update: { kind: 'tool-result', isError: true } } })
          }
        },
      })
      if (result.text) {
        bus.publish(server.AgentEvent.artifactUpdate({
          taskId, contextId, append: false, lastChunk: true,
          artifact: { artifactId: 'answer', name: 'answer', description: '', parts: message(result.text).parts, metadata: undefined, extensions: [] },
          metadata: undefined,
        }))
      }
      const state = STATES[result.stopReason] ?? TaskState.TASK_STATE_FAILED
      const said = state === TaskState.TASK_STATE_COMPLETED ? undefined : (result.diagnostic || `the agent's turn ended with ${result.stopReason}`)
      status(state, said, { cordisSubagents: { stopReason: result.stopReason === 'max-steps' ? 'error' : result.stopReason, usage: result.usage } })
    } finally {
      running.delete(taskId)
      await agent.dispose()
      bus.finished()
    }
  },
  async cancelTask(taskId: string) {
    running.get(taskId)?.abort(new Error('cancelled by the client (CancelTask)'))
  },
}

/** Why this task is refused, or undefined: over the depth ceiling, or too many tasks running. */
function refuse(request: Context): string | undefined {
  const limits = parentLimits(request.userMessage.metadata)
  const ceilings = [limits.maxDepth, ownCeiling].filter((value): value is number => value !== undefined)
  const ceiling = ceilings.length ? Math.min(...ceilings) : undefined
  if (limits.depth !== undefined && ceiling !== undefined && limits.depth > ceiling) {
    return `Refused: this task would run at depth ${limits.depth}, deeper than the ceiling ${ceiling} of its delegation tree.`
  }
  if (running.size >= maxTasks) return `Refused: ${maxTasks} tasks are already running on this server (--max-tasks); try again later.`
  return undefined
}

const card = {
  name: 'cordis-subagents quick start agent',
  description: 'A read-only research agent over a code workspace (list_files, read_file, search_text), served by examples/quickstart over A2A.',
  version: '0.1.0',
  supportedInterfaces: [{ url: '', protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
  provider: undefined,
  capabilities: { streaming: true, pushNotifications: false, extensions: [] },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{
    id: 'workspace-research', name: 'Workspace research', description: 'Reads files of the workspace it serves and answers from them.',
    tags: ['code', 'files'], examples: ['Which packages does this repository have?'], inputModes: ['text/plain'], outputModes: ['text/plain'], securityRequirements: [],
  }],
  signatures: [],
}

const app = express()
const http = app.listen(port, '127.0.0.1')
await new Promise<void>((done, failed) => http.once('listening', () => done()).once('error', failed)).catch((error) => fail(String(error)))
const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`
card.supportedInterfaces[0].url = `${url}/a2a/jsonrpc`
const handler = new server.DefaultRequestHandler(card, new server.InMemoryTaskStore(), executor)
app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }))
app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }))
process.stdout.write(`${JSON.stringify({ url })}\n`)

let stopping = false
async function shutdown() {
  if (stopping) return
  stopping = true
  for (const controller of running.values()) controller.abort(new Error('the A2A server is shutting down'))
  http.close()
  http.closeAllConnections()
  await ctx.stop().catch(() => {})
  await tracing?.shutdown().catch(() => {})
  process.exit(0)
}
process.on('SIGTERM', () => void shutdown())
// Started by a host that may die without a word (SIGKILL): its end of our stdin closing is the sign.
if (args['exit-with-stdin']) {
  process.stdin.on('end', () => void shutdown()).on('error', () => void shutdown()).resume()
}
process.on('SIGINT', () => void shutdown())

function depthOf(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d+$/.test(value.trim())) return undefined
  return Number(value.trim())
}

function fail(message: string): never {
  process.stderr.write(`a2a-server: ${message}\n`)
  process.exit(2)
}
