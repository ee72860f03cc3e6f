/**
 * Push notifications (A2A `TaskPushNotificationConfig`): each task update is POSTed to the
 * webhooks its client set, through the SSRF guard (push-target.ts), over a connection to the
 * checked address, never following a redirect, within `timeout`, with at most `retries` retries
 * (doubling `retryDelay`) on a network failure, a 408, a 429 or a 5xx. A failure is reported (a
 * warning with a code) and counted; it never reaches the task or the host.
 */
import { type ClientRequest, request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { setTimeout as sleep } from 'node:timers/promises'
import type { LookupFunction } from 'node:net'
import type { StreamResponse, Task, TaskPushNotificationConfig } from '@a2a-js/sdk'
import { type PushNotificationSender, type PushNotificationSerializer, type ServerCallContext, V1PushNotificationSerializer } from '@a2a-js/sdk/server'
import { authHeaders, type CappedPushStore } from './push-store.js'
import { pinTarget, type PinnedTarget, TargetRefused, type TargetPolicy } from './push-target.js'

export interface PushSettings extends TargetPolicy {
  timeout: number
  retries: number
  retryDelay: number
  maxBodyBytes: number
}

/** Codes of a push notification that was not delivered. */
export type PushFailureCode = 'PUSH_TARGET_REFUSED' | 'PUSH_TOO_LARGE' | 'PUSH_REDIRECT_REFUSED' | 'PUSH_REJECTED' | 'PUSH_FAILED'

export class GuardedPushSender implements PushNotificationSender {
  /** Deliveries per webhook, one after another (updates arrive in order). */
  private readonly chains = new Map<string, Promise<void>>()
  private readonly serializers: Record<string, PushNotificationSerializer>

  constructor(
    private readonly store: CappedPushStore,
    private readonly settings: PushSettings,
    private readonly report: (code: PushFailureCode, message: string) => void,
    private readonly delivered: () => void,
    legacy?: PushNotificationSerializer,
  ) {
    this.serializers = { '1.0': new V1PushNotificationSerializer(), ...legacy ? { '0.3': legacy } : {} }
  }

  /** Sends whose configs are still being read (before their deliveries are queued). */
  private readonly pending = new Set<Promise<void>>()
  /** Aborted by `stop`: every POST and retry wait in flight ends, and nothing new is sent. */
  private readonly stopping = new AbortController()

  /** The server stops: deliveries in flight are cut (counted `PUSH_FAILED`), later updates are not sent. */
  stop(): void {
    this.stopping.abort()
  }

  async send(update: StreamResponse, context: ServerCallContext, task?: Task): Promise<void> {
    const work = this.queue(update, context, task)
    this.pending.add(work)
    try {
      await work
    } finally {
      this.pending.delete(work)
    }
  }

  private async queue(update: StreamResponse, context: ServerCallContext, task?: Task): Promise<void> {
    const taskId = task?.id ?? taskIdOf(update)
    if (!taskId || this.stopping.signal.aborted) return
    const configs = await this.store.loadWithMetadata(taskId, context).catch(() => [])
    for (const { config, wireVersion } of configs) {
      const serializer = this.serializers[wireVersion] ?? this.serializers['1.0']
      let body: string
      let contentType: string
      try {
        ({ body, contentType } = serializer.serialize(update, task))
      } catch (error) {
        this.report('PUSH_FAILED', `push notification for task ${taskId}: the update could not be serialized (${(error as Error).message})`)
        continue
      }
      const key = `${taskId}\n${config.id}`
      // Never rejects: a delivery that threw is reported, and the webhook's later updates still go.
      const next = (this.chains.get(key) ?? Promise.resolve()).then(() => this.deliver(config, body, contentType, taskId))
        .catch((error: Error) => this.report('PUSH_FAILED', `push notification for task ${taskId} to ${safeUrl(config.url)}: ${error.message}`))
      this.chains.set(key, next)
      void next.finally(() => this.chains.get(key) === next && this.chains.delete(key))
    }
  }

  /** Resolves once every delivery queued now has ended (tests, stop), or after `within` ms. */
  async idle(within?: number): Promise<void> {
    const give = within === undefined ? undefined : sleep(within, undefined, { ref: false })
    while (this.pending.size || this.chains.size) {
      const all = Promise.all([...this.pending, ...this.chains.values()])
      if (!give) await all
      else if (await Promise.race([all.then(() => false), give.then(() => true)])) return
    }
  }

  private async deliver(config: TaskPushNotificationConfig, body: string, contentType: string, taskId: string): Promise<void> {
    const where = `push notification for task ${taskId} to ${safeUrl(config.url)}`
    if (Buffer.byteLength(body) > this.settings.maxBodyBytes) {
      return this.report('PUSH_TOO_LARGE', `${where}: not sent, its body is over ${this.settings.maxBodyBytes} bytes (push.maxBodyBytes)`)
    }
    const headers: Record<string, string> = { 'Content-Type': contentType, ...authHeaders(config) }
    for (let attempt = 0; ; attempt++) {
      let target: PinnedTarget
      try {
        target = await pinTarget(config.url, this.settings)
      } catch (error) {
        return this.report(error instanceof TargetRefused ? error.code : 'PUSH_FAILED', `${where}: ${(error as Error).message}`)
      }
      const stopped = this.stopping.signal
      const outcome = await post(target, headers, body, this.settings.timeout, stopped)
      if (stopped.aborted) return this.report('PUSH_FAILED', `${where}: not delivered, the server stopped`)
      if (typeof outcome === 'number' && outcome >= 200 && outcome < 300) return this.delivered()
      if (typeof outcome === 'number' && outcome >= 300 && outcome < 400) {
        return this.report('PUSH_REDIRECT_REFUSED', `${where}: answered HTTP ${outcome} (a redirect, not followed)`)
      }
      const retryable = typeof outcome !== 'number' || outcome === 408 || outcome === 429 || outcome >= 500
      if (!retryable) return this.report('PUSH_REJECTED', `${where}: answered HTTP ${outcome}`)
      if (attempt >= this.settings.retries) {
        return this.report('PUSH_FAILED', `${where}: ${typeof outcome === 'number' ? `HTTP ${outcome}` : outcome.message}, after ${attempt + 1} attempts`)
      }
      const waited = await sleep(this.settings.retryDelay * 2 ** attempt, true, { signal: stopped }).catch(() => false)
      if (!waited) return this.report('PUSH_FAILED', `${where}: not delivered, the server stopped`)
    }
  }
}

/**
 * One POST to the pinned address within `timeout` (connect, send, the answer's headers: one deadline, not an idle
 * timer, so a webhook that trickles its answer is cut too): its status, or the error that prevented one. The answer's
 * body is not read.
 */
function post(
  target: PinnedTarget, headers: Record<string, string>, body: string, timeout: number, signal: AbortSignal,
): Promise<number | Error> {
  const pinned: LookupFunction = (_host, options, callback) => {
    type All = (error: null, all: Array<{ address: string; family: number }>) => void
    if ((options as { all?: boolean }).all) (callback as All)(null, [{ address: target.address, family: target.family }])
    else callback(null, target.address, target.family)
  }
  const send = target.url.protocol === 'https:' ? httpsRequest : httpRequest
  return new Promise((resolve) => {
    // What `request` throws (a header Node refuses) is this delivery's failure, as a network error is.
    let req: ClientRequest
    const length = String(Buffer.byteLength(body))
    const options = { method: 'POST', headers: { ...headers, 'Content-Length': length }, lookup: pinned, agent: false, signal }
    const deadline = setTimeout(() => req.destroy(new Error(`no answer within ${timeout} ms (push.timeout)`)), timeout)
    const settle = (outcome: number | Error) => {
      clearTimeout(deadline)
      resolve(outcome)
    }
    try {
      req = send(target.url, options, (res) => {
        res.resume()
        res.destroy()
        settle(res.statusCode ?? 0)
      })
    } catch (error) {
      return settle(error as Error)
    }
    req.on('error', settle)
    req.end(body)
  })
}

function taskIdOf(update: StreamResponse): string | undefined {
  const payload = (update as { payload?: { $case?: string; value?: { id?: string; taskId?: string } } }).payload
  return payload?.value?.taskId || payload?.value?.id || undefined
}

/** A webhook's path in a log line is cut past this many characters. */
const MAX_LOGGED_PATH = 200

/** The URL without its query (a token may be in it), its path cut to `MAX_LOGGED_PATH`. */
function safeUrl(text: string): string {
  try {
    const url = new URL(text)
    const path = url.pathname.length > MAX_LOGGED_PATH ? `${url.pathname.slice(0, MAX_LOGGED_PATH)}…` : url.pathname
    return `${url.origin}${path}`
  } catch {
    return '(not a URL)'
  }
}
