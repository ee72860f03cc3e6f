/**
 * Starts go over a connection of their own. A host that stops gracefully closes its idle
 * keep-alive connections; a request written onto one of them as it closes fails with the socket
 * closed (undici `UND_ERR_SOCKET: other side closed`), and from the client's side that cannot be told
 * from a host that read the request, took the task and then went away, so it is never failed over.
 * A start (a message, which may create or continue a task) is therefore never sent over a kept-alive
 * connection: it opens one, and a stopping host refuses it cleanly, at connect (`ECONNREFUSED`: its
 * listener is closed) or with a 503 (serve-a2a: `HOST_STOPPING`); both fail over (host-failure.ts).
 * Polls, cancels and card reads keep using kept-alive connections: they are safe to repeat.
 */
import { Agent } from 'undici'

/** JSON-RPC methods that send a message (1.0 and 0.3 names), as the SDKs write them. */
const SEND_METHOD = /"method"\s*:\s*"(SendMessage|SendStreamingMessage|message\/send|message\/stream)"/
/** HTTP+JSON paths that send a message. */
const SEND_PATH = /\/message:(send|stream)$/

/** Whether a request sends a message (starts or continues a task). */
function isSend(input: Parameters<typeof fetch>[0], init: RequestInit | undefined): boolean {
  if ((init?.method ?? 'GET').toUpperCase() !== 'POST') return false
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url
  if (SEND_PATH.test(new URL(url).pathname)) return true
  return typeof init?.body === 'string' && SEND_METHOD.test(init.body)
}

/**
 * One provider's dispatcher for sends: no keep-alive (each request its own connection, closed after its answer).
 * A streamed send's answer is the run's stream, open on one of its connections for as long as the task is
 * followed; a parked run's answer goes over it too. So the provider and every run not yet disposed hold it:
 * it closes when the last of them lets go, and a run that outlives its provider's load keeps it until its dispose.
 */
export class StartConnections {
  private readonly agent = new Agent({ pipelining: 0 })
  /** The provider (until `close`) and every run holding it. */
  private holders = 1
  /** The provider let go (`close`): no new run may hold it. */
  private closed = false
  private destroyed?: Promise<void>

  /** The dispatcher `fetch` should use for this request: ours for a send, else the global one (undefined). */
  dispatcherFor(input: Parameters<typeof fetch>[0], init: RequestInit | undefined): Agent | undefined {
    return isSend(input, init) ? this.agent : undefined
  }

  /**
   * A run holds the connections until it calls the function it gets (once; later calls do nothing).
   * `undefined` once the provider let go: its load starts no new run.
   */
  hold(): (() => Promise<void>) | undefined {
    if (this.closed) return undefined
    this.holders++
    let held = true
    return () => {
      if (!held) return Promise.resolve()
      held = false
      return this.drop()
    }
  }

  /** The provider lets go: the connections close now if no run holds them, else when the last one lets go. */
  close(): Promise<void> {
    if (this.closed) return Promise.resolve()
    this.closed = true
    return this.drop()
  }

  private drop(): Promise<void> {
    if (--this.holders > 0) return Promise.resolve()
    // A stream still open is cut (none is, once every holder let go).
    return this.destroyed ??= this.agent.destroy().catch(() => {})
  }
}
