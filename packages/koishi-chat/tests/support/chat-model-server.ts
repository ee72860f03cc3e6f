// A scripted model behind a loopback OpenAI-compatible chat-completions server (127.0.0.1, a random
// port, non-streaming): the far edge of the Koishi chat specs. Every request is kept for asserts.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface ChatMessage { role: string, content: string | null, tool_call_id?: string }
export type ScriptReply = { text: string } | { tool: string, input: Record<string, unknown> }

export interface ChatModelServer {
  /** `http://127.0.0.1:<port>/v1` */
  baseURL: string
  requests: ChatMessage[][]
  close(): Promise<void>
}

/** Starts the server; `script` answers each request from its messages. */
export async function chatModelServer(script: (messages: ChatMessage[]) => ScriptReply): Promise<ChatModelServer> {
  const requests: ChatMessage[][] = []
  let serial = 0
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
        res.writeHead(404).end()
        return
      }
      const messages = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { messages: ChatMessage[] }).messages
      requests.push(messages)
      const reply = script(messages)
      const message = 'text' in reply
        ? { role: 'assistant', content: reply.text }
        : { role: 'assistant', content: null, tool_calls: [{ id: `call_${++serial}`, type: 'function', function: { name: reply.tool, arguments: JSON.stringify(reply.input) } }] }
      const body = JSON.stringify({
        id: `chatcmpl-${serial}`, object: 'chat.completion', created: 0, model: 'scripted',
        choices: [{ index: 0, message, finish_reason: 'text' in reply ? 'stop' : 'tool_calls' }],
        usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 },
      })
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    }),
  }
}
