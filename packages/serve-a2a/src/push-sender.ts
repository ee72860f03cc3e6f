/**
 * Push notifications (A2A `TaskPushNotificationConfig`): each task update is POSTed to the
 * webhooks its client set, through the SSRF guard (push-target.ts), over a connection to the
 * checked address, never following a redirect, within `timeout`, with at most `retries` retries
 * (doubling `retryDelay`) on a network failure, a 408, a 429 or a 5xx. A failure is reported (a
 * warning with a code) and counted; it never reaches the task or the host.
 */
import { request as httpRequest, validateHeaderValue } from 'node:http'
import { request as httpsRequest } from 'node:https'
import type { LookupFunction } from 'node:net'
import type { StreamResponse, Task, TaskPushNotificationConfig } from '@a2a-js/sdk'
import { RequestMalformedError, UnsupportedOperationError } from '@a2a-js/sdk/errors'
import {
  InMemoryPushNotificationStore, type PushNotificationSender, type PushNotificationSerializer, type ServerCallContext,
  V1PushNotificationSerializer,
} from '@a2a-js/sdk/server'
import { pinTarget, type PinnedTarget, TargetRefused, type TargetPolicy, urlProblem } from './push-target.js'

export interface PushSettings extends TargetPolicy {
  timeout: number
  retries: number
  retryDelay: number
  maxBodyBytes: number
  maxConfigsPerTask: number
}

/** Codes of a push notification that was not delivered. */
export type PushFailureCode = 'PUSH_TARGET_REFUSED' | 'PUSH_TOO_LARGE' | 'PUSH_REDIRECT_REFUSED' | 'PUSH_REJECTED' | 'PUSH_FAILED'

/** The SDK's store, with each URL checked (syntax) and at most `maxConfigsPerTask` configs per task. */
export class CappedPushStore extends InMemoryPushNotificationStore {
  constructor(private readonly settings: PushSettings) {
    super()
  }

  override async save(taskId: string, context: ServerCallContext, config: TaskPushNotificationConfig): Promise<void> {
    const problem = urlProblem(config.url, this.settings)
    if (problem) throw new RequestMalformedError({ message: `Refused: ${problem}.`, metadata: { code: 'PUSH_TARGET_REFUSED' } })
    const credential = credentialProblem(config)
    if (credential) throw new RequestMalformedError({ message: `Refused: ${credential}.`, metadata: { code: 'PUSH_CREDENTIAL_REFUSED' } })
    const existing = await this.load(taskId, context)
    if (existing.length >= this.settings.maxConfigsPerTask && !existing.some((entry) => config.id && entry.id === config.id)) {
      throw new UnsupportedOperationError({
        message: `Refused: task ${taskId} already has ${existing.length} push notification configs (push.maxConfigsPerTask); delete one first.`,
        metadata: { code: 'TOO_MANY_PUSH_CONFIGS' },
      })
    }
    await super.save(taskId, context, config)
  }
}

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
    if (!taskId) return
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

  /** Resolves once every delivery queued now has ended (tests, stop). */
  async idle(): Promise<void> {
    while (this.pending.size || this.chains.size) await Promise.all([...this.pending, ...this.chains.values()])
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
      const outcome = await post(target, headers, body, this.settings.timeout)
      if (typeof outcome === 'number' && outcome >= 200 && outcome < 300) return this.delivered()
      if (typeof outcome === 'number' && outcome >= 300 && outcome < 400) {
        return this.report('PUSH_REDIRECT_REFUSED', `${where}: answered HTTP ${outcome} (a redirect, not followed)`)
      }
      const retryable = typeof outcome !== 'number' || outcome === 408 || outcome === 429 || outcome >= 500
      if (!retryable) return this.report('PUSH_REJECTED', `${where}: answered HTTP ${outcome}`)
      if (attempt >= this.settings.retries) {
        return this.report('PUSH_FAILED', `${where}: ${typeof outcome === 'number' ? `HTTP ${outcome}` : outcome.message}, after ${attempt + 1} attempts`)
      }
      await new Promise((resolve) => setTimeout(resolve, this.settings.retryDelay * 2 ** attempt))
    }
  }
}

/** Longest credential a webhook's header carries (the token, or the authentication's scheme and credentials). */
const MAX_CREDENTIAL_CHARS = 4096

/** The A2A way of carrying the client's credential: `authentication` as `Authorization`, else the token in `X-A2A-Notification-Token`. */
function authHeaders(config: TaskPushNotificationConfig): Record<string, string> {
  const auth = config.authentication
  if (auth?.scheme && auth.credentials) return { Authorization: `${auth.scheme} ${auth.credentials}` }
  if (config.token) return { 'X-A2A-Notification-Token': config.token }
  return {}
}

/** Why a config's credential cannot go in its header (Node's own rule for a header value, and a bound), checked when it is set. */
function credentialProblem(config: TaskPushNotificationConfig): string | undefined {
  for (const [name, value] of Object.entries(authHeaders(config))) {
    if (value.length > MAX_CREDENTIAL_CHARS) return `the push notification's credential (${name}) is over ${MAX_CREDENTIAL_CHARS} characters`
    try {
      validateHeaderValue(name, value)
    } catch {
      return `the push notification's credential (${name}) holds a character a header cannot carry (a control character, or text beyond Latin-1)`
    }
  }
  return undefined
}

/** One POST to the pinned address: its status, or the error that prevented one. The answer's body is not read. */
function post(target: PinnedTarget, headers: Record<string, string>, body: string, timeout: number): Promise<number | Error> {
  const pinned: LookupFunction = (_host, options, callback) => {
    type All = (error: null, all: Array<{ address: string; family: number }>) => void
    if ((options as { all?: boolean }).all) (callback as All)(null, [{ address: target.address, family: target.family }])
    else callback(null, target.address, target.family)
  }
  const send = target.url.protocol === 'https:' ? httpsRequest : httpRequest
  return new Promise((resolve) => {
    // What `request` throws (a header Node refuses) is this delivery's failure, as a network error is.
    let req: ReturnType<typeof send>
    try {
      req = send(target.url, { method: 'POST', headers: { ...headers, 'Content-Length': String(Buffer.byteLength(body)) }, lookup: pinned, agent: false, timeout }, (res) => {
        res.resume()
        res.destroy()
        resolve(res.statusCode ?? 0)
      })
    } catch (error) {
      return resolve(error as Error)
    }
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeout} ms (push.timeout)`)))
    req.on('error', (error) => resolve(error))
    req.end(body)
  })
}

function taskIdOf(update: StreamResponse): string | undefined {
  const payload = (update as { payload?: { $case?: string; value?: { id?: string; taskId?: string } } }).payload
  return payload?.value?.taskId || payload?.value?.id || undefined
}

/** The URL without its query (a token may be in it). */
function safeUrl(text: string): string {
  try {
    const url = new URL(text)
    return `${url.origin}${url.pathname}`
  } catch {
    return '(not a URL)'
  }
}
