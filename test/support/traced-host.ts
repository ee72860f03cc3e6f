// A host whose agents are traced by @cordis-subagents/telemetry into an in-memory exporter, with
// spawn (and optionally the quick start's ACP agent) behind subagent tools, and a scripted model.
// Spans of an ACP child process are read from the JSON-lines file it exports to (tracing.ts).
import { existsSync, readFileSync } from 'node:fs'
import type { Context } from 'cordis'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { type GenerateRequest, ScriptedModel, type ScriptedResponse } from '@cordis-subagents/agent'
import type AgentRuntime from '@cordis-subagents/agent'
import * as spawn from '@cordis-subagents/provider-spawn'
import * as acp from '@cordis-subagents/provider-acp'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import Telemetry from '@cordis-subagents/telemetry'
import * as workspaceTools from '@cordis-subagents/quickstart/workspace-tools'
import type { SpanLine } from '@cordis-subagents/quickstart/tracing'
import { ACP_AGENT, ROOT } from '../helpers.js'
import { type Host, startHost } from './host.js'

export const USAGE = { inputTokens: 10, outputTokens: 5 }

export interface TracedHostOptions {
  /** The parent's (and spawn children's) model: a function of the request. */
  script: (request: GenerateRequest) => ScriptedResponse | Promise<ScriptedResponse>
  /** Telemetry config; `false` leaves the plugin unloaded. */
  telemetry?: Record<string, unknown> | false
  /** A file the quick start's ACP agent exports its spans to: loads provider-acp + `subagent_acp`. */
  acpTraceFile?: string
  agents?: AgentRuntime.Config
}

export interface TracedHost extends Host {
  exporter: InMemorySpanExporter
  provider: BasicTracerProvider
  model: ScriptedModel
}

export async function startTracedHost(options: TracedHostOptions): Promise<TracedHost> {
  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  const model = new ScriptedModel(options.script, { usage: USAGE })
  const host = await startHost({
    agents: { model: 'script', ...options.agents },
    before(ctx: Context) {
      ctx.plugin({ name: 'script-model', inject: ['agents'], apply: (ctx: Context) => { ctx.agents.registerModel('script', model) } })
      ctx.plugin(spawn, { name: 'spawn' })
      ctx.plugin(SubagentTool, { provider: 'spawn', toolName: 'subagent' })
      if (options.acpTraceFile) {
        ctx.plugin(workspaceTools, { root: ROOT } as never)
        ctx.plugin(acp, {
          name: 'acp', command: process.execPath, args: ACP_AGENT, cwd: ROOT,
          env: { QUICKSTART_TRACE_FILE: options.acpTraceFile },
        } as acp.Config)
        ctx.plugin(SubagentTool, { provider: 'acp', toolName: 'subagent_acp' })
      }
      if (options.telemetry !== false) ctx.plugin(Telemetry, { tracerProvider: provider, ...options.telemetry })
    },
  })
  const stop = host.stop
  return {
    ...host, exporter, provider, model,
    async stop() {
      await stop()
      await provider.shutdown()
    },
  }
}

/** A span as the tests compare it, from the in-memory exporter or a child process' file. */
export interface SpanView {
  name: string
  traceId: string
  spanId: string
  parentSpanId?: string
  attributes: Record<string, unknown>
  /** 0 unset, 1 ok, 2 error. */
  status: number
  statusMessage?: string
  service: string
}

export function spansOf(exporter: InMemorySpanExporter, file?: string): SpanView[] {
  const own: SpanView[] = exporter.getFinishedSpans().map((span) => ({
    name: span.name,
    traceId: span.spanContext().traceId,
    spanId: span.spanContext().spanId,
    ...span.parentSpanContext ? { parentSpanId: span.parentSpanContext.spanId } : {},
    attributes: { ...span.attributes },
    status: span.status.code,
    ...span.status.message ? { statusMessage: span.status.message } : {},
    service: 'parent',
  }))
  if (!file || !existsSync(file)) return own
  const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as SpanLine)
  return [...own, ...lines.map((line) => ({
    name: line.name,
    traceId: line.traceId,
    spanId: line.spanId,
    ...line.parentSpanId ? { parentSpanId: line.parentSpanId } : {},
    attributes: line.attributes,
    status: line.status.code,
    ...line.status.message ? { statusMessage: line.status.message } : {},
    service: 'acp-child',
  }))]
}

/** The attributes a tree line shows for a span (enough to tell the spans apart and see outcomes). */
function label(span: SpanView): string {
  const a = span.attributes
  const shown: string[] = []
  const add = (key: string, name = key.split('.').pop()!) => {
    if (a[key] !== undefined) shown.push(`${name}=${Array.isArray(a[key]) ? (a[key] as unknown[]).join('|') : String(a[key])}`)
  }
  switch (a['gen_ai.operation.name']) {
    case 'invoke_agent': add('cordis_subagents.agent.depth', 'depth'); add('cordis_subagents.stop_reason', 'stop'); break
    case 'chat': add('cordis_subagents.step', 'step'); add('gen_ai.response.finish_reasons', 'finish'); break
    case 'execute_tool': add('gen_ai.tool.call.id', 'call'); break
    default: add('cordis_subagents.stop_reason', 'stop')
  }
  add('error.type', 'error')
  if (span.service !== 'parent') shown.push(`in ${span.service}`)
  return `${span.name}${shown.length ? ` (${shown.join(', ')})` : ''}`
}

/** Siblings by step, then name, then tool call id (code-point order, not locale order). */
function compare(x: SpanView, y: SpanView): number {
  const key = (span: SpanView) => [Number(span.attributes['cordis_subagents.step'] ?? 0), span.name, String(span.attributes['gen_ai.tool.call.id'] ?? '')] as const
  const [a, b] = [key(x), key(y)]
  if (a[0] !== b[0]) return a[0] - b[0]
  for (const i of [1, 2] as const) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1
  return 0
}

/**
 * The trace under `root` as indented lines, siblings in a stable order (step, name, call id).
 * Spans of other traces are left out; a span whose parent is missing is listed at the end as an orphan.
 */
export function tree(spans: SpanView[], root: SpanView): string[] {
  const same = spans.filter((span) => span.traceId === root.traceId)
  const children = new Map<string, SpanView[]>()
  for (const span of same) {
    if (!span.parentSpanId) continue
    children.set(span.parentSpanId, [...children.get(span.parentSpanId) ?? [], span])
  }
  const lines: string[] = []
  const seen = new Set<string>()
  const walk = (span: SpanView, depth: number) => {
    seen.add(span.spanId)
    lines.push(`${'  '.repeat(depth)}${label(span)}`)
    for (const child of (children.get(span.spanId) ?? []).sort(compare)) walk(child, depth + 1)
  }
  walk(root, 0)
  for (const span of same) if (!seen.has(span.spanId)) lines.push(`orphan: ${label(span)}`)
  return lines
}

/** The one span without a parent named `name`. */
export function rootSpan(spans: SpanView[], name: string): SpanView {
  const roots = spans.filter((span) => span.name === name && !span.parentSpanId)
  if (roots.length !== 1) throw new Error(`expected one root span "${name}", found ${roots.length}: ${spans.map((s) => s.name).join(', ')}`)
  return roots[0]
}

export function lastUserText(request: GenerateRequest): string {
  for (let i = request.messages.length - 1; i >= 0; i--) if (request.messages[i].role === 'user') return request.messages[i].content
  return ''
}

export function toolResults(request: GenerateRequest) {
  return request.messages.filter((message) => message.role === 'tool')
}
