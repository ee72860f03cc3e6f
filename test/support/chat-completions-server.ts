// A scripted OpenAI-compatible model on 127.0.0.1 (POST /v1/chat/completions, non-streaming), for a
// Koishi app in another process to run on through @cordis-subagents/model-openai. The script sees the
// request's messages and tool names and answers text or one tool call. Every reply closes its
// connection, so a client keeps no socket to it after its last call.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

interface ChatMessage { role: string; content: string | null; tool_calls?: unknown[] }
export interface ChatRequest { messages: ChatMessage[]; tools: string[]; model: string; authorization?: string }
export type ChatReply = { text: string } | { tool: string; input: Record<string, unknown> }

export interface ChatServer {
  /** `http://127.0.0.1:<port>/v1` */
  baseURL: string
  requests: ChatRequest[]
  close(): Promise<void>
}

const MAX_BODY_BYTES = 4 * 1024 * 1024

export async function startChatServer(script: (request: ChatRequest) => ChatReply): Promise<ChatServer> {
  const requests: ChatRequest[] = []
  let serial = 0
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_BODY_BYTES) req.destroy()
      else chunks.push(chunk)
    })
    req.on('end', () => {
      res.setHeader('connection', 'close')
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}')
        return
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { model: string; messages: ChatMessage[]; tools?: { function: { name: string } }[] }
      const request: ChatRequest = {
        model: body.model,
        messages: body.messages,
        tools: (body.tools ?? []).map((tool) => tool.function.name),
        authorization: req.headers.authorization,
      }
      requests.push(request)
      const reply = script(request)
      const message = 'text' in reply
        ? { role: 'assistant', content: reply.text }
        : { role: 'assistant', content: null, tool_calls: [{ id: `call_${++serial}`, type: 'function', function: { name: reply.tool, arguments: JSON.stringify(reply.input) } }] }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
        id: `chatcmpl-${serial}`, object: 'chat.completion', created: 1_700_000_000, model: body.model,
        choices: [{ index: 0, message, logprobs: null, finish_reason: 'text' in reply ? 'stop' : 'tool_calls' }],
        usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 },
      }))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }),
  }
}
