// Issue 44 item 2: a 429 storm on a 32-wide fan-out, with the model gate's shared backoff and without
// it. A loopback OpenAI-compatible server (node:http on 127.0.0.1) accepts `perWindow` chat
// completions per window of `windowMs` (fixed windows from its start) and answers every other one
// HTTP 429 with `Retry-After` (whole seconds to the window's end). A root agent on model-openai
// delegates 32 children at once through subagent-tool → spawn, each child one model call. With the
// gate (rateLimit on) the refusals pause every call of the process and lower the endpoint's
// concurrency; without it (rateLimit.enabled false) each call retries on its own in the OpenAI SDK,
// which honours Retry-After too. `test/rate-limit-storm.slow.spec.ts` asserts on it; the bench reports
// the request counts as a ratio.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Context } from 'cordis'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime from '@cordis-subagents/agent'
import SubagentService from '@cordis-subagents/subagents-service'
import * as OpenAIModel from '@cordis-subagents/model-openai'
import * as Spawn from '@cordis-subagents/provider-spawn'
import * as SubagentTool from '@cordis-subagents/subagent-tool'

export const FAN_OUT = 32

export interface ServerLimits {
  /** Completions accepted per window. */
  perWindow: number
  windowMs: number
}

/** What the server saw. */
interface Traffic {
  requests: number
  refused: number
  /** Requests per window, by window index from the server's start. */
  perWindow: number[]
  /** The first window with a refusal. */
  firstRefusal?: number
}

interface LimitedServer {
  baseURL: string
  traffic: Traffic
  close(): Promise<void>
}

/** The rate-limited chat-completions server: the root's first request gets FAN_OUT tool calls, every other one a text. */
async function startLimitedServer(limits: ServerLimits): Promise<LimitedServer> {
  const start = Date.now()
  const accepted: number[] = []
  const traffic: Traffic = { requests: 0, refused: 0, perWindow: [] }
  const server = createServer((req, res) => void answer(req, res))
  async function answer(req: IncomingMessage, res: ServerResponse) {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const now = Date.now()
    const window = Math.floor((now - start) / limits.windowMs)
    traffic.requests++
    traffic.perWindow[window] = (traffic.perWindow[window] ?? 0) + 1
    if ((accepted[window] ?? 0) >= limits.perWindow) {
      traffic.refused++
      traffic.firstRefusal ??= window
      const left = start + (window + 1) * limits.windowMs - now
      return send(res, 429, { error: { message: 'Rate limit reached for requests', type: 'requests', code: 'rate_limit_exceeded' } },
        { 'retry-after': String(Math.max(1, Math.ceil(left / 1000))) })
    }
    accepted[window] = (accepted[window] ?? 0) + 1
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { messages: Array<{ role: string }>; tools?: unknown[] }
    const root = body.tools?.length && !body.messages.some((message) => message.role === 'tool')
    const message = root
      ? { role: 'assistant', content: null, tool_calls: Array.from({ length: FAN_OUT }, (_, i) => ({
        id: `call_${i}`, type: 'function', function: { name: 'subagent', arguments: JSON.stringify({ description: `part ${i}`, prompt: `Do part ${i}.` }) },
      })) }
      : { role: 'assistant', content: body.tools?.length ? 'all parts done' : 'part done' }
    send(res, 200, {
      id: 'chatcmpl-bench', object: 'chat.completion', created: 1_700_000_000, model: 'm',
      choices: [{ index: 0, message, finish_reason: root ? 'tool_calls' : 'stop' }],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    })
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    traffic,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    }),
  }
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  const data = JSON.stringify(body)
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data), ...headers })
  res.end(data)
}

export interface StormResult {
  gate: boolean
  /** The gate's `maxModelCallsPerSecond`, when it had one. */
  perSecond?: number
  traffic: Traffic
  /** The root's stop reason and text. */
  stopReason: string
  text: string
  /** Children whose tool result was an error. */
  failedChildren: number
  /** The root tree's `usage.rateLimitWaitMs` (summed over calls; undefined without the gate). */
  rateLimitWaitMs?: number
  wallMs: number
}

/**
 * One fan-out against a fresh server. `retries`: the retry budget of one call, the gate's
 * (`rateLimit.maxRetries`) or, with the gate off, the SDK's (`maxRetries`), so both get the same.
 * `perSecond`: the gate's call rate (`maxModelCallsPerSecond`), when it has one.
 */
export async function storm(gate: boolean, limits: ServerLimits, retries: number, perSecond?: number): Promise<StormResult> {
  const server = await startLimitedServer(limits)
  const ctx = new Context()
  ctx.plugin(ToolRegistry)
  ctx.plugin(AgentRuntime, { model: 'openai', rateLimit: { enabled: gate, maxRetries: retries }, ...perSecond ? { maxModelCallsPerSecond: perSecond } : {} })
  ctx.plugin(SubagentService, { maxChildren: FAN_OUT, maxConcurrent: FAN_OUT, maxConcurrentPerParent: FAN_OUT })
  ctx.plugin(OpenAIModel, { name: 'openai', baseURL: server.baseURL, apiKey: '', model: 'm', maxRetries: retries })
  ctx.plugin(Spawn, { name: 'spawn' })
  ctx.plugin(SubagentTool, { provider: 'spawn', toolName: 'subagent' })
  try {
    await ctx.start()
    await ctx.lifecycle.flush()
    const agent = ctx.agents.create({})
    const began = performance.now()
    const result = await agent.run('Split the work in 32 parts and delegate each.')
    const wallMs = performance.now() - began
    const results = agent.transcript.messages.filter((message) => message.role === 'tool')
    return {
      gate,
      ...perSecond ? { perSecond } : {},
      traffic: server.traffic,
      stopReason: result.stopReason,
      text: result.text,
      failedChildren: results.filter((message) => message.role === 'tool' && message.isError).length,
      rateLimitWaitMs: result.usage.rateLimitWaitMs,
      wallMs,
    }
  } finally {
    await ctx.stop()
    await server.close()
  }
}

interface SectionOptions {
  log(line?: string): void
  headline: Array<[string, string, string]>
  quick: boolean
}

/** The bench's section: pairs of storms (gate on, gate off; the order alternates), the request counts as a ratio per pair. */
export async function rateLimitSection({ log, headline, quick }: SectionOptions): Promise<void> {
  const limits: ServerLimits = { perWindow: 4, windowMs: 1000 }
  const retries = 12
  const perSecond = limits.perWindow - 1
  const pairs: Array<{ on: StormResult; off: StormResult; paced: StormResult }> = []
  for (let i = 0; i < (quick ? 1 : 3); i++) {
    const first = await storm(i % 2 === 0, limits, retries)
    const second = await storm(i % 2 !== 0, limits, retries)
    const paced = await storm(true, limits, retries, perSecond)
    pairs.push(first.gate ? { on: first, off: second, paced } : { on: second, off: first, paced })
  }
  const median = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b)
    const mid = sorted.length >> 1
    return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
  }
  const ratios = pairs.map(({ on, off }) => on.traffic.requests / off.traffic.requests)
  const refusalRatios = pairs.map(({ on, off }) => on.traffic.refused / off.traffic.refused)
  log('## 13. A 429 storm on a 32-wide fan-out: the model gate\'s shared backoff on and off (issue 44)')
  log()
  log(`A loopback OpenAI-compatible server (bench/scenarios/rate-limit.ts) accepts ${limits.perWindow} chat completions per ${limits.windowMs} ms window and answers the others HTTP 429 with \`Retry-After\`; a root agent on model-openai delegates ${FAN_OUT} children at once (subagent → spawn), each one model call: ${FAN_OUT + 2} completions of work. Gate on: \`rateLimit\` of ctx.agents at its defaults (maxRetries ${retries}); off: \`rateLimit.enabled: false\`, the OpenAI SDK retrying each call on its own (maxRetries ${retries}, honouring Retry-After too). ${pairs.length} pair${pairs.length === 1 ? '' : 's'}, the order alternating; the ratio is per pair.`)
  log()
  log(`Each pair also runs the storm with a call rate below the server's allowance (\`maxModelCallsPerSecond: ${perSecond}\`, gate on): its row gives the busiest window of all.`)
  log()
  log('| pair | gate | requests | 429s | failed children | busiest window after the first two | busiest window | wall s |')
  log('|---|---|---|---|---|---|---|---|')
  pairs.forEach(({ on, off, paced }, index) => {
    for (const run of [on, off, paced]) {
      const all = Array.from(run.traffic.perWindow, (count) => count ?? 0)
      const later = all.slice((run.traffic.firstRefusal ?? 0) + 2)
      const gate = run.perSecond ? `on, ${run.perSecond}/s` : run.gate ? 'on' : 'off'
      log(`| ${index + 1} | ${gate} | ${run.traffic.requests} | ${run.traffic.refused} | ${run.failedChildren} | ${Math.max(0, ...later)} | ${Math.max(0, ...all)} | ${(run.wallMs / 1000).toFixed(1)} |`)
    }
  })
  log()
  log(`Requests, gate on ÷ off: median ${median(ratios).toFixed(2)}× (${ratios.map((r) => r.toFixed(2)).join(', ')}); 429s: median ${median(refusalRatios).toFixed(2)}×.`)
  log()
  headline.push(['a 429 storm on a 32-wide fan-out (requests, gate on ÷ off)', `${median(ratios).toFixed(2)}× the requests, ${median(refusalRatios).toFixed(2)}× the 429s`,
    `gate off: ${median(pairs.map(({ off }) => off.traffic.requests))} requests for ${FAN_OUT + 2} completions`])
}
