// A scripted model behind a loopback HTTP server (127.0.0.1, a random port), for the real ACP
// adapters: the protocol modules (fake-responses-api.ts for Codex, fake-messages-api.ts for Claude)
// turn a scripted reply into their wire format. Every request is recorded so tests can assert what
// the agent saw; the time each reply's last event was written is kept for the bench.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/** One request the agent sent, as the script sees it. */
export interface ModelRequest {
  /** The request path, e.g. `/v1/responses`. */
  path: string
  body: Record<string, unknown>
  /** Names of the tools the request offers the model. */
  tools: string[]
  /** Texts of the tool results the request carries, oldest first (protocol-specific extraction). */
  toolResults: string[]
  /** Whether the request carries a user message (a new turn) after the last tool result. */
  userAfterTools: boolean
}

/** What the scripted model answers: text, or a call of a tool the request offers (then it is asked again). */
export type Reply =
  | { text: string }
  | { tool: string; input: Record<string, unknown>; text?: string }

/** The script: called for every model request the protocol module routes to it. */
export type Script = (request: ModelRequest) => Reply

export interface WireFormat {
  /** Whether the path is this protocol's generate endpoint. */
  matches(path: string): boolean
  /** Reads tool names and results from the request body. */
  read(body: Record<string, unknown>): Pick<ModelRequest, 'tools' | 'toolResults' | 'userAfterTools'>
  /** Writes the reply (streamed when the body asks for it); returns when the last byte was handed to the socket. */
  write(res: ServerResponse, reply: Reply, body: Record<string, unknown>, serial: number): void
  /** Answers a side endpoint (token counting, model lists); false leaves it to the 404. */
  side?(path: string, res: ServerResponse): boolean
}

export interface FakeModelServer {
  /** `http://127.0.0.1:<port>` */
  origin: string
  /** Every generate request, in arrival order. */
  requests: ModelRequest[]
  /** Paths answered 404 (something the agent wanted that the fake does not speak). */
  unknown: string[]
  /** `performance.now()` when the last event of each reply was written, in reply order. */
  repliedAt: number[]
  /** The reply each request got, in request order. */
  replies: Reply[]
  setScript(script: Script): void
  close(): Promise<void>
}

/** The most a request body may hold before the fake refuses it (agents send their whole history). */
const MAX_BODY_BYTES = 32 * 1024 * 1024

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_BODY_BYTES) { req.destroy(); reject(new Error('request body over 32 MiB')); return }
      chunks.push(chunk)
    })
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    req.on('error', reject)
  })
}

export async function startFakeModelServer(format: WireFormat, script: Script): Promise<FakeModelServer> {
  const requests: ModelRequest[] = []
  const unknown: string[] = []
  const repliedAt: number[] = []
  const replies: Reply[] = []
  let current = script
  let serial = 0

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const path = (req.url ?? '/').split('?')[0]!
    if (req.method === 'HEAD') { res.writeHead(200); res.end(); return } // a reachability probe
    const raw = req.method === 'POST' ? await readBody(req) : ''
    if (req.method === 'POST' && format.matches(path)) {
      const body = JSON.parse(raw) as Record<string, unknown>
      const request: ModelRequest = { path, body, ...format.read(body) }
      requests.push(request)
      const reply = current(request)
      replies.push(reply)
      format.write(res, reply, body, ++serial)
      repliedAt.push(performance.now())
      return
    }
    if (format.side?.(path, res)) return
    unknown.push(`${req.method} ${path}`)
    res.writeHead(404, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ error: { message: `the fake model server does not serve ${path}`, type: 'not_found' } }))
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: { message: String(error), type: 'fake_server_error' } }))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    origin: `http://127.0.0.1:${port}`,
    requests,
    unknown,
    repliedAt,
    replies,
    setScript(next) { current = next },
    async close() {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

/** One server-sent event. */
export function sse(res: ServerResponse, event: string, data: unknown) {
  res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)
}

