import { randomUUID } from 'node:crypto'
import { request } from 'node:http'
import { Context } from 'cordis'
import { z } from 'zod'
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client'
import { Role, type StreamResponse } from '@a2a-js/sdk'
import { A2AClient } from 'a2a-sdk-v03/client'
import AgentRuntime, { type Agent, type GenerateRequest, ScriptedModel, type ScriptedReply, type ScriptedResponse } from '@cordis-subagents/agent'
import ToolRegistry from '@cordis-subagents/tools'
import A2aServer, { type Config } from '../src/index.js'

export interface Served {
  ctx: Context
  server: A2aServer
  model: ScriptedModel
  /** Inputs the `secret` tool was called with. */
  secretCalls: unknown[]
}

/**
 * A real app: the tool registry, the agent runtime with a scripted model, two tools (`echo`,
 * `secret`) and the A2A server on 127.0.0.1 with `config`.
 */
type Script = ScriptedReply[] | ((request: GenerateRequest, index: number) => ScriptedResponse | Promise<ScriptedResponse>)

export async function serve(config: Partial<Config> = {}, script: Script = () => ScriptedModel.text('done')): Promise<Served> {
  const model = new ScriptedModel(script, { usage: { inputTokens: 10, outputTokens: 5 } })
  const secretCalls: unknown[] = []
  const ctx = new Context()
  ctx.plugin(ToolRegistry)
  ctx.plugin(AgentRuntime, { model: 'scripted' })
  ctx.plugin({
    name: 'fixture',
    inject: ['agents', 'tools'],
    apply(ctx: Context) {
      ctx.agents.registerModel('scripted', model)
      ctx.tools.register({ name: 'echo', description: 'Echo', input: z.object({ text: z.string() }), execute: async ({ text }) => ({ content: text }) })
      ctx.tools.register({ name: 'secret', description: 'Reads a secret', input: z.object({}), execute: async (input) => { secretCalls.push(input); return { content: 'the secret' } } })
    },
  })
  ctx.plugin(A2aServer, config)
  await ctx.start()
  await ctx.lifecycle.flush()
  if (!ctx.a2aServer?.url) throw new Error('the A2A server did not start')
  return { ctx, server: ctx.a2aServer, model, secretCalls }
}

/** Every agent the runtime creates from now on (the served tasks' agents). */
export function watchAgents(served: Served): Agent[] {
  const agents: Agent[] = []
  const create = served.ctx.agents.create.bind(served.ctx.agents)
  served.ctx.agents.create = ((options: Parameters<typeof create>[0]) => {
    const agent = create(options)
    agents.push(agent)
    return agent
  }) as typeof create
  return agents
}

/** fetch with extra headers on every request (a credential). */
function fetchWith(headers: Record<string, string>): typeof fetch {
  return (input, init = {}) => {
    const merged = new Headers(init.headers)
    for (const [name, value] of Object.entries(headers)) merged.set(name, value)
    return fetch(input, { ...init, headers: merged })
  }
}

export function bearer(token: string | undefined): Record<string, string> {
  return token === undefined ? {} : { Authorization: `Bearer ${token}` }
}

/** The @a2a-js/sdk 1.x client (A2A 1.0), reading the card as a 1.0 client does. */
export async function client10(url: string, headers: Record<string, string>): Promise<Client> {
  const fetchImpl = fetchWith(headers)
  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  }))
  return factory.createFromUrl(url)
}

/** The @a2a-js/sdk 0.3 client (A2A 0.3), installed as `a2a-sdk-v03`. */
export function client03(url: string, headers: Record<string, string>): Promise<A2AClient> {
  return A2AClient.fromCardUrl(`${url}/.well-known/agent-card.json`, { fetchImpl: fetchWith(headers) })
}

/** A 1.0 SendMessage request's params. */
export function message10(text: string, metadata?: Record<string, unknown>) {
  return {
    tenant: '',
    message: {
      messageId: randomUUID(), contextId: '', taskId: '', role: Role.ROLE_USER,
      parts: [{ content: { $case: 'text' as const, value: text }, mediaType: 'text/plain', filename: '', metadata: undefined }],
      metadata, extensions: [], referenceTaskIds: [],
    },
    configuration: undefined,
    metadata: undefined,
  }
}

/** Every event of a 1.0 stream. */
export async function drain(stream: AsyncGenerator<StreamResponse>): Promise<StreamResponse[]> {
  const events: StreamResponse[] = []
  for await (const event of stream) events.push(event)
  return events
}

/**
 * A raw HTTP request through node:http (what a hostile caller sends: any Host, any Origin, any
 * body), with its status and parsed body.
 */
export interface RawOptions {
  method?: string
  path?: string
  headers?: Record<string, string>
  body?: string | Buffer
}

export function raw(url: string, options: RawOptions = {}): Promise<{ status: number; body: any; headers: Record<string, unknown> }> {
  const target = new URL(options.path ?? '/a2a/jsonrpc', url)
  return new Promise((resolve, reject) => {
    const req = request(target, { method: options.method ?? 'POST', headers: options.headers, agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8')
        let body: unknown = text
        try {
          body = JSON.parse(text)
        } catch {}
        resolve({ status: res.statusCode!, body, headers: res.headers })
      })
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(options.body)
  })
}

/** A raw JSON-RPC POST with a JSON body. */
export function rpc(url: string, body: unknown, headers: Record<string, string> = {}) {
  return raw(url, { headers: { 'Content-Type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) })
}

/** A loader app of these specs (`startLoadedApp`): the tool registry and the agent runtime, then the spec's entries. */
export const A2A_APP = {
  core: `- id: tools
  name: '@cordis-subagents/tools'
- id: agents
  name: '@cordis-subagents/agent'`,
  prefix: 'serve-a2a-loader-',
}
