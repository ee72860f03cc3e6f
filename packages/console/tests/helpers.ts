// A real host for the console's tests: tools, agents with one scripted model, the subagents
// service, provider-spawn, a sync and a background subagent tool, the verbs, and the console.
import { request as httpRequest } from 'node:http'
import { Context } from 'cordis'
import { z } from 'zod'
import Tools from '@cordis-subagents/tools'
import AgentRuntime, { type GenerateRequest, ScriptedModel, type ScriptedResponse } from '@cordis-subagents/agent'
import SubagentService from '@cordis-subagents/subagents-service'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import * as SubagentControl from '@cordis-subagents/subagent-tool/control'
import * as ProviderSpawn from '@cordis-subagents/provider-spawn'
import SubagentConsole, { type Config } from '@cordis-subagents/console'

/** A child whose prompt starts with this waits until its turn is aborted. */
export const HOLD = 'Hold until cancelled'

const lastUser = (request: GenerateRequest) => [...request.messages].reverse().find((m) => m.role === 'user')?.content ?? ''
const hasResults = (request: GenerateRequest) => request.messages.at(-1)?.role === 'tool'

/** Waits until `signal` aborts (a child held on purpose). */
function held(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) return reject(signal.reason)
    signal.addEventListener('abort', () => reject(signal.reason), { once: true })
  })
}

export async function consoleHost(root: (request: GenerateRequest) => ScriptedResponse, config: Partial<Config> = {}) {
  const ctx = new Context()
  ctx.plugin(Tools)
  ctx.plugin(AgentRuntime, { model: 'scripted' })
  ctx.plugin(SubagentService)
  ctx.plugin(ProviderSpawn, { name: 'spawn' })
  ctx.plugin(SubagentTool, { provider: 'spawn', toolName: 'subagent' })
  ctx.plugin(SubagentTool, { provider: 'spawn', toolName: 'subagent_bg', mode: 'background', onTurnEnd: 'end' })
  ctx.plugin(SubagentControl)
  ctx.plugin(SubagentConsole, config)
  await ctx.start()
  ctx.tools.register({ name: 'lookup', description: 'looks a thing up', input: z.strictObject({ q: z.string() }), execute: ({ q }) => ({ content: `found ${q}` }) })
  const model = new ScriptedModel(async (request) => {
    const prompt = lastUser(request)
    if (request.messages[0]?.content.startsWith(HOLD) && prompt.startsWith(HOLD)) {
      if (!hasResults(request)) return { text: 'holding', toolCalls: [{ name: 'lookup', input: { q: 'hold' } }] }
      return held(request.signal)
    }
    if (request.messages[0]?.content.startsWith('child:')) {
      return hasResults(request) ? { text: `answer to ${prompt}` } : { toolCalls: [{ name: 'lookup', input: { q: prompt } }] }
    }
    return root(request)
  }, {})
  ctx.agents.registerModel('scripted', withUsage(model))
  const view = ctx.subagentConsole
  return { ctx, view, stop: () => ctx.stop() }
}

/** Every reply spends 7 input and 3 output tokens. */
function withUsage(model: ScriptedModel) {
  return {
    generate: async (request: GenerateRequest) => ({ ...await model.generate(request), usage: { inputTokens: 7, outputTokens: 3 } }),
  }
}

export interface Reply {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

/** One HTTP request to 127.0.0.1 with exactly these headers (Host included). */
export interface CallOptions {
  method?: string
  headers?: Record<string, string>
  body?: string
}

export function call(port: number, path: string, options: CallOptions = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method: options.method ?? 'GET', headers: { host: `127.0.0.1:${port}`, ...options.headers } }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk) => chunks.push(chunk))
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }))
    })
    req.on('error', reject)
    req.setTimeout(10_000, () => req.destroy(new Error(`${path}: no answer in 10 s`)))
    req.end(options.body)
  })
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

export { eventually } from '@cordis-subagents/test-support'
