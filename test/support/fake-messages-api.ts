// Anthropic's Messages API (POST /v1/messages, streamed as server-sent events), the protocol
// claude-agent-acp (Claude Code) speaks: text and tool_use blocks, plus the token-counting endpoint.
import type { ServerResponse } from 'node:http'
import { type Reply, sse, type WireFormat } from './fake-model-server.js'

type Block = Record<string, unknown>
type Message = { role?: string; content?: unknown }

function blockText(content: unknown): string {
  if (typeof content === 'string') return content
  if (Array.isArray(content)) return content.map((part) => blockText((part as Block).text ?? (part as Block).content ?? '')).join('')
  return ''
}

function blocksOf(message: Message): Block[] {
  return Array.isArray(message.content) ? message.content as Block[] : [{ type: 'text', text: String(message.content ?? '') }]
}

function contentOf(reply: Reply, serial: number): Block[] {
  const blocks: Block[] = []
  if (reply.text) blocks.push({ type: 'text', text: reply.text })
  if ('tool' in reply) blocks.push({ type: 'tool_use', id: `toolu_${serial}`, name: reply.tool, input: reply.input })
  return blocks
}

function stream(res: ServerResponse, reply: Reply, model: string, serial: number) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
  sse(res, 'message_start', {
    type: 'message_start',
    message: { id: `msg_${serial}`, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 100, output_tokens: 1 } },
  })
  contentOf(reply, serial).forEach((block, index) => {
    if (block.type === 'text') {
      sse(res, 'content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } })
      sse(res, 'content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: block.text } })
    } else {
      sse(res, 'content_block_start', { type: 'content_block_start', index, content_block: { ...block, input: {} } })
      sse(res, 'content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) } })
    }
    sse(res, 'content_block_stop', { type: 'content_block_stop', index })
  })
  sse(res, 'message_delta', { type: 'message_delta', delta: { stop_reason: 'tool' in reply ? 'tool_use' : 'end_turn', stop_sequence: null }, usage: { output_tokens: 10 } })
  sse(res, 'message_stop', { type: 'message_stop' })
  res.end()
}

export const messagesApi: WireFormat = {
  matches: (path) => path.endsWith('/v1/messages'),

  read(body) {
    const tools = Array.isArray(body.tools) ? (body.tools as Block[]).map((tool) => String(tool.name ?? '')) : []
    const messages = Array.isArray(body.messages) ? body.messages as Message[] : []
    const toolResults: string[] = []
    let lastResult = -1
    let lastUser = -1
    messages.forEach((message, index) => {
      if (message.role !== 'user') return
      for (const block of blocksOf(message)) {
        if (block.type === 'tool_result') { toolResults.push(blockText(block.content)); lastResult = index }
        else if (block.type === 'text' && index > lastResult) lastUser = index
      }
    })
    return { tools, toolResults, userAfterTools: lastUser > lastResult }
  },

  write(res, reply, body, serial) {
    const model = String(body.model ?? 'claude-fake')
    if (body.stream) { stream(res, reply, model, serial); return }
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({
      id: `msg_${serial}`, type: 'message', role: 'assistant', model, content: contentOf(reply, serial),
      stop_reason: 'tool' in reply ? 'tool_use' : 'end_turn', stop_sequence: null, usage: { input_tokens: 100, output_tokens: 10 },
    }))
  },

  side(path, res) {
    if (!path.endsWith('/v1/messages/count_tokens')) return false
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ input_tokens: 100 }))
    return true
  },
}
