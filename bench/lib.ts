import { cpus, totalmem } from 'node:os'
import { performance } from 'node:perf_hooks'
import { Context } from 'cordis'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime, { type ChatModel, type GenerateRequest, type GenerateResponse, type Message } from '@cordis-subagents/agent'
import SubagentService from '@cordis-subagents/subagents-service'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import * as ProviderSpawn from '@cordis-subagents/provider-spawn'
import * as ProviderFork from '@cordis-subagents/provider-fork'
import { rounds } from './paired.js'

export { SubagentTool, ProviderSpawn }

export const now = () => performance.now()

export function gc(): void {
  const g = (globalThis as { gc?: () => void }).gc
  if (!g) throw new Error('Run with node --expose-gc (npm run bench does).')
  g(); g()
}

/**
 * `mean` is over every sample, so the batches a garbage collection landed in count in full (the
 * median drops them); `gcShare`, where measured, is the part of the system's timed batches spent in GC.
 * `samples` are the samples in the order they were taken (for paired ratios: targets.ts), `clock`
 * the clock they were taken with where the producer says.
 */
export interface Stats { median: number; mean: number; min: number; max: number; n: number; gcShare?: number; samples?: number[]; clock?: 'CPU' | 'wall' }

export function stats(samples: number[]): Stats {
  const s = [...samples].sort((a, b) => a - b)
  const mid = s.length >> 1
  const median = s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2
  const mean = s.reduce((sum, x) => sum + x, 0) / s.length
  return { median, mean, min: s[0], max: s[s.length - 1], n: s.length, samples: [...samples] }
}

export const fmt = (x: number, digits = 1) => (Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(digits))
export const fmtStats = (s: Stats, unit = '', digits = 1) => `${fmt(s.median, digits)}${unit} (${fmt(s.min, digits)}–${fmt(s.max, digits)})`
/** Mean with GC, then the median with min–max, then the GC share when measured. */
export const fmtMean = (s: Stats, unit = '', digits = 1) => `**${fmt(s.mean, digits)}${unit}** · ${fmtStats(s, unit, digits)}${s.gcShare === undefined ? '' : ` · GC ${fmt(s.gcShare * 100, 0)} %`}`

/**
 * Runs each system's `batch()` in rounds, interleaved A B A B …, after `warmup` untimed rounds
 * (paired.ts). A sample is the mean µs per iteration of one batch (a batch amortises timer
 * resolution), by the wall clock (default) or the process' CPU time (`clock: 'CPU'`); samples
 * of the same round are a pair. GC pauses (perf_hooks 'gc' entries) are charged to the system
 * whose batch they fell in.
 */
export async function interleave(
  systems: Record<string, () => Promise<void>>,
  options: { rounds: number; warmup: number; batch: number; clock?: 'CPU' | 'wall' },
): Promise<Record<string, Stats>> {
  const clock = options.clock ?? 'wall'
  const measured = await rounds(systems, options)
  return Object.fromEntries(Object.entries(measured).map(([name, r]) => [name,
    { ...stats(clock === 'CPU' ? r.cpu : r.wall), gcShare: r.gcMs / (r.timedMs || 1), clock }]))
}

export function machine() {
  const cpu = cpus()
  return {
    cpu: `${cpu[0]?.model ?? 'unknown'} × ${cpu.length}`,
    memory: `${(totalmem() / 2 ** 30).toFixed(1)} GiB`,
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    date: new Date().toISOString(),
  }
}

/** Where the reading models leave what they read, so the reads cannot be optimised away. */
const readSink = { chars: 0 }

/**
 * What any real adapter does with a request: visit every message and read its role and content
 * (and a tool message's call id), as a mapping to a vendor's format would. A model that never
 * reads its messages hides what a history costs to read (issue 28: a Proxy view did).
 */
export function readMessages(messages: readonly Message[]): void {
  let chars = 0
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]
    chars += message.role.length + message.content.length
    if (message.role === 'tool') chars += message.toolCallId.length
  }
  readSink.chars += chars
}

/**
 * A zero-latency model for benchmarks. It reads every message it is given (`readMessages`), and
 * unlike `ScriptedModel` keeps no record of requests, so it retains nothing across runs
 * (ScriptedModel copies every request into `requests`).
 */
export class BenchModel implements ChatModel {
  constructor(
    private readonly reply: (request: GenerateRequest) => GenerateResponse | Promise<GenerateResponse>,
    /**
     * false: a model that does not read its messages (only the last, to decide its reply): the
     * framework's own cost, apart from reading.
     */
    private readonly reads = true,
  ) {}

  async generate(request: GenerateRequest): Promise<GenerateResponse> {
    if (this.reads) readMessages(request.messages)
    return this.reply(request)
  }
}

export const text = (value: string): GenerateResponse => ({ text: value, toolCalls: [], finishReason: 'stop', usage: { inputTokens: 10, outputTokens: 5 } })
export const calls = (list: Array<{ name: string; input: unknown }>, step = 0): GenerateResponse => ({
  text: '', finishReason: 'tool-calls', usage: { inputTokens: 10, outputTokens: 5 },
  toolCalls: list.map((call, i) => ({ id: `call_${step}_${i}`, name: call.name, input: call.input })),
})

export const lastMessage = (request: GenerateRequest): Message => request.messages[request.messages.length - 1]
export const CHILD = 'CHILD: '

/** The standard workload: parent calls the delegation tool once, the child answers, parent answers. */
export function delegationModel(toolName: string, options: { reads?: boolean } = {}): BenchModel {
  return new BenchModel((request) => {
    const last = lastMessage(request)
    if (last.role === 'tool') return text('parent final answer')
    if (last.content.startsWith(CHILD)) return text('child answer')
    return calls([{ name: toolName, input: { description: 'look something up', prompt: `${CHILD}look something up` } }])
  }, options.reads ?? true)
}

export interface Host { ctx: Context; stop(): Promise<void> }

export interface HostOptions {
  model: ChatModel
  /** Raises the tree limits (default: the shipped defaults) for scenarios that need N children at once. */
  width?: number
  tools?: boolean
  /** Extra config of the subagent tools (e.g. a budget). */
  tool?: Record<string, unknown>
  /** Extra config of ctx.agents (e.g. a root budget). */
  agents?: Record<string, unknown>
  /** Extra config of ctx.subagents (e.g. a raised maxDepth). */
  subagents?: Record<string, unknown>
  /** Loads more plugins before the app starts (e.g. a database and ctx.checkpoints). */
  plugins?: (ctx: Context) => void
}

/** A real app: ctx.tools, ctx.agents, ctx.subagents (+ its config), spawn and fork providers, two subagent tools. */
export async function host(options: HostOptions): Promise<Host> {
  const ctx = new Context()
  const width = options.width
  ctx.plugin(ToolRegistry)
  ctx.plugin(AgentRuntime, { model: 'bench', maxSteps: 25, ...width ? { maxToolCallsPerStep: width } : {}, ...options.agents })
  const wide = width ? { maxConcurrentPerParent: width, maxConcurrent: width, maxChildren: width } : {}
  ctx.plugin(SubagentService, { ...wide, ...options.subagents })
  ctx.plugin(ProviderSpawn, { name: 'spawn' })
  ctx.plugin(ProviderFork, { name: 'fork' })
  if (options.tools !== false) {
    ctx.plugin(SubagentTool, { provider: 'spawn', toolName: 'subagent', ...options.tool })
    ctx.plugin(SubagentTool, { provider: 'fork', toolName: 'subagent_fork', ...options.tool })
  }
  options.plugins?.(ctx)
  await ctx.start()
  ctx.agents.registerModel('bench', options.model)
  await ctx.lifecycle.flush()
  return { ctx, stop: () => ctx.stop() }
}

/** Number of cordis event listeners currently registered. */
export function listenerCount(ctx: Context): number {
  const hooks = (ctx.lifecycle as unknown as { _hooks: Record<string, unknown[]> })._hooks
  return Object.values(hooks).reduce((sum, list) => sum + (list?.length ?? 0), 0)
}
