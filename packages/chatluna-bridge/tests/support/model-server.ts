// A loopback OpenAI-compatible chat-completions server for the bridge's specs: a scripted reply per
// request (the far edge: no real model), non-streamed JSON, on 127.0.0.1 port 0.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

export interface ChatRequestBody {
  model: string
  messages: {
    role: string
    content?: unknown
    tool_calls?: { id: string; function: { name: string; arguments: string } }[]
    tool_call_id?: string
  }[]
  tools?: { type: 'function'; function: { name: string; description?: string; parameters?: Record<string, unknown> } }[]
}

interface ScriptedReply {
  content?: string
  toolCalls?: { id: string; name: string; arguments: Record<string, unknown> }[]
  usage?: { prompt_tokens: number; completion_tokens: number }
  /** An HTTP error status instead of a completion. */
  status?: number
  /** Never answer (until the client goes away): for abort specs. */
  hang?: boolean
}

export type Script = (body: ChatRequestBody) => ScriptedReply

export class ScriptedModelServer {
  readonly requests: ChatRequestBody[] = []
  private readonly sockets = new Set<Socket>()
  /** Requests whose client went away before an answer (a hang the caller aborted). */
  closedEarly = 0
  /** Hung requests whose client is still connected (a request nobody aborted). */
  hanging = 0
  script: Script = () => ({ content: 'nothing scripted' })

  private constructor(private readonly server: Server) {
    server.on('connection', (socket) => {
      this.sockets.add(socket)
      socket.on('close', () => this.sockets.delete(socket))
    })
    server.on('request', (req, res) => { void this.handle(req, res) })
  }

  static async start(): Promise<ScriptedModelServer> {
    const server = createServer()
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    return new ScriptedModelServer(server)
  }

  get baseURL(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`
  }

  private async handle(req: IncomingMessage, res: ServerResponse) {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      res.writeHead(404).end()
      return
    }
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ChatRequestBody
    this.requests.push(body)
    const reply = this.script(body)
    if (reply.hang) {
      this.hanging++
      res.on('close', () => {
        this.hanging--
        this.closedEarly++
      })
      return
    }
    if (reply.status) {
      res.writeHead(reply.status, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: { message: `scripted failure ${reply.status}`, type: 'server_error' } }))
      return
    }
    const toolCalls = reply.toolCalls?.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: JSON.stringify(call.arguments) } }))
    const message = { role: 'assistant', content: reply.content ?? null, ...toolCalls ? { tool_calls: toolCalls } : {} }
    const usage = reply.usage ?? { prompt_tokens: 10, completion_tokens: 5 }
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({
      id: `cmpl-${this.requests.length}`,
      object: 'chat.completion',
      model: body.model,
      choices: [{ index: 0, message, finish_reason: toolCalls ? 'tool_calls' : 'stop' }],
      usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
    }))
  }

  async close() {
    for (const socket of this.sockets) socket.destroy()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}
