// A recording reverse proxy on 127.0.0.1 for the A2A contract specs: every request a client sends
// and every answer the server gives pass through unchanged (an event stream is passed on as it
// arrives) and are kept as exchanges. A JSON answer that names the server's own origin (an agent
// card's interface URL) is rewritten to name the proxy, so the client keeps talking through it.
import { createServer, request, type IncomingHttpHeaders, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'

/** One request and its answer, as they crossed the proxy (bodies as text, the answer's before the origin rewrite). */
export interface Exchange {
  method: string
  path: string
  requestHeaders: IncomingHttpHeaders
  requestBody: string
  status: number
  contentType: string
  responseBody: string
}

export interface Recorder {
  /** The proxy's base URL (`http://127.0.0.1:<port>`). */
  url: string
  readonly exchanges: Exchange[]
  close(): Promise<void>
}

function readAll(stream: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    stream.on('data', (chunk: Buffer) => chunks.push(chunk))
    stream.once('end', () => resolve(Buffer.concat(chunks)))
    stream.once('error', reject)
  })
}

/** Starts a proxy in front of `target` (a base URL on this machine). */
export async function startRecorder(target: string): Promise<Recorder> {
  const upstream = new URL(target)
  const exchanges: Exchange[] = []
  let own = ''
  const proxy = createServer(async (req, res) => {
    const requestBody = await readAll(req)
    const headers = { ...req.headers, host: upstream.host }
    const target = { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers, agent: false }
    const forward = request(target, (answer) => {
      const contentType = String(answer.headers['content-type'] ?? '')
      const exchange: Exchange = {
        method: req.method ?? '', path: req.url ?? '', requestHeaders: req.headers, requestBody: requestBody.toString('utf8'),
        status: answer.statusCode ?? 0, contentType, responseBody: '',
      }
      // Kept as the answer starts, its body filled as it arrives (a stream the client cancels is kept too).
      exchanges.push(exchange)
      if (contentType.includes('text/event-stream')) {
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.on('data', (chunk: Buffer) => {
          exchange.responseBody += chunk.toString('utf8')
          res.write(chunk)
        })
        answer.once('end', () => res.end())
        answer.once('error', () => res.destroy())
        return
      }
      readAll(answer).then((body) => {
        exchange.responseBody = body.toString('utf8')
        const text = contentType.includes('json') ? exchange.responseBody.split(upstream.origin).join(own) : undefined
        const sent = text === undefined ? body : Buffer.from(text, 'utf8')
        const outHeaders = { ...answer.headers, 'content-length': String(sent.length) }
        delete outHeaders['transfer-encoding']
        res.writeHead(answer.statusCode ?? 502, outHeaders)
        res.end(sent)
      }, () => res.destroy())
    })
    forward.once('error', () => res.destroy())
    // The client went away (a cancelled stream): so does the request upstream.
    res.once('close', () => forward.destroy())
    forward.end(requestBody)
  })
  proxy.listen(0, '127.0.0.1')
  await new Promise<void>((resolve) => proxy.once('listening', () => resolve()))
  own = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
  return {
    url: own,
    exchanges,
    close: () => new Promise<void>((resolve) => {
      proxy.close(() => resolve())
      proxy.closeAllConnections()
    }),
  }
}

/** The `data` of each event of an event stream (its `data:` lines joined), in order. */
function sseData(body: string): string[] {
  const events: string[] = []
  for (const block of body.split(/\r?\n\r?\n/)) {
    const data = block.split(/\r?\n/).filter((line) => line.startsWith('data:')).map((line) => line.slice(5).replace(/^ /, ''))
    if (data.length) events.push(data.join('\n'))
  }
  return events
}

/** The messages an exchange answered with: each event of an event stream, or the one body. */
export function answersOf(exchange: Exchange): string[] {
  return exchange.contentType.includes('text/event-stream') ? sseData(exchange.responseBody) : [exchange.responseBody]
}

/** A recorded body as JSON, or `{ notJson }` with its first 200 characters when it is not JSON. */
export function parseBody(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return { notJson: text.slice(0, 200) }
  }
}
