// A client of Koishi's console over its WebSocket, speaking the console's own protocol as its
// browser client does: `data` and `patch` messages fill `data`; `call` sends a request to a listener.
import WebSocket from 'ws'

export interface Response {
  value?: unknown
  error?: string
}

export class ConsoleClient {
  readonly data: Record<string, unknown> = {}
  private readonly waiting = new Map<string, (response: Response) => void>()
  private sequence = 0

  private constructor(private readonly socket: WebSocket) {
    // Listening before the socket opens: the console sends its data in the frames right after the handshake.
    socket.on('message', (raw) => {
      type Body = { key: string; value: unknown; id: string; error?: string }
      const { type, body } = JSON.parse(raw.toString()) as { type: string; body: Body }
      if (type === 'data') this.data[body.key] = body.value
      else if (type === 'patch' && this.data[body.key] && typeof this.data[body.key] === 'object') Object.assign(this.data[body.key] as object, body.value)
      else if (type === 'response') this.waiting.get(body.id)?.({ value: body.value, error: body.error })
    })
  }

  static async open(url: string): Promise<ConsoleClient> {
    const socket = new WebSocket(url)
    const client = new ConsoleClient(socket)
    await new Promise((resolve, reject) => {
      socket.once('open', resolve)
      socket.once('error', reject)
    })
    return client
  }

  call(type: string, ...args: unknown[]): Promise<Response> {
    const id = String(++this.sequence)
    return new Promise((resolve) => {
      this.waiting.set(id, resolve)
      this.socket.send(JSON.stringify({ id, type, args }))
    })
  }

  close(): void {
    this.socket.close()
  }
}
