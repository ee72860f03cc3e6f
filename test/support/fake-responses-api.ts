// OpenAI's Responses API (POST /v1/responses, streamed as `response.*` server-sent events), the
// protocol Codex speaks: enough of it for codex-acp to run turns with text and function calls.
import type { ServerResponse } from 'node:http'
import { type Reply, sse, type WireFormat } from './fake-model-server.js'

type Item = Record<string, unknown>

function outputText(output: unknown): string {
  if (typeof output === 'string') return output
  if (Array.isArray(output)) return output.map((part) => String((part as Item).text ?? '')).join('')
  if (output && typeof output === 'object') return outputText((output as Item).content ?? JSON.stringify(output))
  return String(output ?? '')
}

/**
 * Codex groups each MCP server's tools in a `namespace` tool (`mcp__files` holding `read_text_file`).
 * The script sees them flat (`mcp__files__read_text_file`); a call goes back as the name plus its namespace.
 */
function toolNames(tools: Item[]): string[] {
  return tools.flatMap((tool) => tool.type === 'namespace' && Array.isArray(tool.tools)
    ? (tool.tools as Item[]).map((inner) => `${String(tool.name)}__${String(inner.name)}`)
    : [String(tool.name ?? tool.type ?? '')])
}

function functionCall(name: string, tools: Item[]): { name: string; namespace?: string } {
  for (const tool of tools) {
    const prefix = `${String(tool.name)}__`
    if (tool.type === 'namespace' && name.startsWith(prefix)) return { name: name.slice(prefix.length), namespace: String(tool.name) }
  }
  return { name }
}

const usage = {
  input_tokens: 100, input_tokens_details: { cached_tokens: 0 },
  output_tokens: 10, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 110,
}

export const responsesApi: WireFormat = {
  matches: (path) => path.endsWith('/responses'),

  read(body) {
    const tools = Array.isArray(body.tools) ? toolNames(body.tools as Item[]) : []
    const input = Array.isArray(body.input) ? body.input as Item[] : []
    const toolResults: string[] = []
    let lastResult = -1
    let lastUser = -1
    input.forEach((item, index) => {
      if (item.type === 'function_call_output' || item.type === 'custom_tool_call_output') {
        toolResults.push(outputText(item.output))
        lastResult = index
      } else if (item.type === 'message' && item.role === 'user') lastUser = index
    })
    return { tools, toolResults, userAfterTools: lastUser > lastResult }
  },

  write(res: ServerResponse, reply: Reply, body, serial) {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
    const id = `resp_${serial}`
    sse(res, 'response.created', { type: 'response.created', response: { id } })
    const items: Item[] = []
    if (reply.text) {
      const messageId = `msg_${serial}`
      sse(res, 'response.output_item.added', { type: 'response.output_item.added', output_index: 0, item: { type: 'message', id: messageId, role: 'assistant', status: 'in_progress', content: [] } })
      sse(res, 'response.output_text.delta', { type: 'response.output_text.delta', item_id: messageId, output_index: 0, content_index: 0, delta: reply.text })
      items.push({ type: 'message', id: messageId, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: reply.text, annotations: [] }] })
    }
    if ('tool' in reply) {
      items.push({ type: 'function_call', id: `fc_${serial}`, call_id: `call_${serial}`, ...functionCall(reply.tool, Array.isArray(body.tools) ? body.tools as Item[] : []), arguments: JSON.stringify(reply.input), status: 'completed' })
    }
    items.forEach((item, index) => sse(res, 'response.output_item.done', { type: 'response.output_item.done', output_index: index, item }))
    sse(res, 'response.completed', { type: 'response.completed', response: { id, status: 'completed', output: items, usage } })
    res.end()
  },

  side(path, res) {
    if (!path.endsWith('/models')) return false
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ object: 'list', data: [], models: [] }))
    return true
  },
}
