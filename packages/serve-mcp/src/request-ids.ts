import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'

/**
 * The longest string JSON-RPC id a client may send (numbers are always fine). The SDK's HTTP transport keys the
 * request's stream by its id for as long as the request is unanswered, so a client-chosen id must stay small.
 */
const MAX_REQUEST_ID_CHARS = 256

/** The JSON-RPC error (-32600, Invalid Request) a body carrying an over-long id gets, or undefined when every id fits. */
export function idRefusal(body: unknown): { code: number; message: string; data: { code: string } } | undefined {
  for (const message of messages(body)) {
    const id = message.id
    if (typeof id !== 'string' || id.length <= MAX_REQUEST_ID_CHARS) continue
    return {
      code: -32600,
      message: `MCP_SERVE_ID_TOO_LONG: a JSON-RPC id is ${id.length} characters long; this server accepts string ids of at most ` +
        `${MAX_REQUEST_ID_CHARS} characters (numbers are fine). Send a shorter id.`,
      data: { code: 'MCP_SERVE_ID_TOO_LONG' },
    }
  }
  return undefined
}

/**
 * Answers each request a `notifications/cancelled` in `body` names, once the SDK has aborted it. The SDK's
 * protocol sends nothing for a cancelled request, and its HTTP transport frees a request's entry (and ends its
 * SSE stream) only when the request is answered, so without this every cancelled call stays mapped for the
 * session's life. The answer goes through the transport's public `send`: it ends the stream, or, when the client
 * already left, drops the entry (and throws, which is ignored; so does a request that was answered first).
 * The client that cancelled ignores it, as MCP asks of a response that crosses a cancellation.
 */
export async function answerCancelled(transport: StreamableHTTPServerTransport, body: unknown): Promise<void> {
  for (const message of messages(body)) {
    if (message.method !== 'notifications/cancelled') continue
    const id = (message.params as { requestId?: unknown } | undefined)?.requestId
    if (typeof id !== 'string' && typeof id !== 'number') continue
    await transport.send({
      jsonrpc: '2.0',
      id,
      error: {
        code: -32000,
        message: 'MCP_SERVE_CANCELLED: the client cancelled this request (notifications/cancelled); its call was aborted.',
        data: { code: 'MCP_SERVE_CANCELLED' },
      },
    }).catch(() => {})
  }
}

/** True when every message of `body` cancels (`notifications/cancelled`, a `tasks/cancel` request) and there is one at least. */
export function cancelsOnly(body: unknown): boolean {
  const all = messages(body)
  const cancels = all.filter((message) => message.method === 'notifications/cancelled' || message.method === 'tasks/cancel')
  return all.length > 0 && cancels.length === (Array.isArray(body) ? body.length : 1)
}

function messages(body: unknown): Array<Record<string, unknown>> {
  const all = Array.isArray(body) ? body : [body]
  return all.filter((message): message is Record<string, unknown> => typeof message === 'object' && message !== null)
}
