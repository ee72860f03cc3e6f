/**
 * Push notifications (A2A `TaskPushNotificationConfig`): each task update is POSTed to the
 * webhooks its client set, through the SSRF guard (push-target.ts), over a connection to the
 * checked address, never following a redirect, within `timeout`, with at most `retries` retries
 * (doubling `retryDelay`) on a network failure, a 408, a 429 or a 5xx. A failure is reported (a
 * warning with a code) and counted; it never reaches the task or the host. A webhook's updates wait in a bounded queue
 * (push-queue.ts): past `maxQueued`, or after a delivery failed all its retries, they coalesce into the task's latest
 * state (counted `PUSH_COALESCED`); what waits for a task that is forgotten goes with it (`PUSH_DROPPED`).
 */
import { type ClientRequest, request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { setTimeout as sleep } from 'node:timers/promises'
import type { LookupFunction } from 'node:net'
import type { StreamResponse, Task, TaskPushNotificationConfig } from '@a2a-js/sdk'
import { type PushNotificationSender, type PushNotificationSerializer, type ServerCallContext, V1PushNotificationSerializer } from '@a2a-js/sdk/server'
import { authHeaders, type CappedPushStore } from './push-store.js'
import { type Collapsed, DEFAULT_MAX_QUEUED, keptAsIs, type Serialized, WebhookQueue } from './push-queue.js'
import { pinTarget, type PinnedTarget, TargetRefused, type TargetPolicy } from './push-target.js'
import { scopeOf, taskKey } from './task-store.js'

export interface PushSettings extends TargetPolicy {
  timeout: number
  retries: number
  retryDelay: number
  maxBodyBytes: number
  /** Updates waiting per webhook before they coalesce (push-queue.ts); `DEFAULT_MAX_QUEUED` without it. */
  maxQueued?: number
}

/** Codes of a push notification that was not delivered. */
export type PushFailureCode = 'PUSH_TARGET_REFUSED' | 'PUSH_TOO_LARGE' | 'PUSH_REDIRECT_REFUSED' | 'PUSH_REJECTED' | 'PUSH_FAILED'

/**
 * Codes of updates that were not sent one by one: merged into a later snapshot of their task (`PUSH_COALESCED`), or
 * dropped (`PUSH_DROPPED`: their task went with its webhooks, or more updates the task stops in waited than the bound).
 */
export type PushSkipCode = 'PUSH_COALESCED' | 'PUSH_DROPPED'

/** One webhook (a push config of a task) with updates to deliver: what waits, and the drain that POSTs it in order. */
interface Webhook {
  taskId: string
  /** The scope of the task's owner (its credential's, never the credential): a failure is reported under it. */
  scope: string
  queue: WebhookQueue
  /** The config and its serializer as last loaded (a replaced token applies to what still waits). */
  config: TaskPushNotificationConfig
  serializer: PushNotificationSerializer
  draining?: Promise<void>
}

export class GuardedPushSender implements PushNotificationSender {
  /** By task key (the task store's), then config id: the webhooks with updates being delivered, each drained in order. */
  private readonly webhooks = new Map<string, Map<string, Webhook>>()
  private readonly serializers: Record<string, PushNotificationSerializer>

  constructor(
    private readonly store: CappedPushStore,
    private readonly settings: PushSettings,
    /** A notification not delivered; `scope` is its task owner's (the log budget's key: one client spends only its own). */
    private readonly report: (code: PushFailureCode, message: string, scope: string) => void,
    private readonly delivered: () => void,
    legacy?: PushNotificationSerializer,
    private readonly skipped: (code: PushSkipCode, count: number, message: string) => void = () => {},
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

  /** @internal Updates waiting for their POST now, every webhook together (not the ones in flight). */
  get queued(): number {
    let count = 0
    for (const hooks of this.webhooks.values()) for (const hook of hooks.values()) count += hook.queue.size
    return count
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

  /**
   * The task under `key` was forgotten with its webhooks, or (`configId`) its client deleted one of them: what still
   * waits for them goes too (a POST in flight ends).
   */
  forget(key: string, configId?: string): void {
    const why = configId === undefined ? 'the task\'s webhooks went with it' : 'its webhook was deleted'
    for (const [id, hook] of this.webhooks.get(key) ?? []) {
      if (configId !== undefined && id !== configId) continue
      const dropped = hook.queue.clear()
      if (dropped) this.skipped('PUSH_DROPPED', dropped, `${where(hook)}: ${dropped} waiting updates dropped, ${why}`)
    }
  }

  private get maxQueued(): number {
    return this.settings.maxQueued ?? DEFAULT_MAX_QUEUED
  }

  private async queue(update: StreamResponse, context: ServerCallContext, task?: Task): Promise<void> {
    const taskId = task?.id ?? taskIdOf(update)
    if (!taskId || this.stopping.signal.aborted) return
    const configs = await this.store.loadWithMetadata(taskId, context).catch(() => [])
    const key = taskKey(context, taskId)
    const scope = scopeOf(context)
    const kept = keptAsIs(update)
    for (const { config, wireVersion } of configs) {
      const serializer = this.serializers[wireVersion] ?? this.serializers['1.0']
      let serialized: Serialized
      try {
        serialized = serializer.serialize(update, task)
      } catch (error) {
        const why = `the update could not be serialized (${(error as Error).message})`
        this.report('PUSH_FAILED', `push notification for task ${taskId}: ${why}`, scope)
        continue
      }
      if (Buffer.byteLength(serialized.body) > this.settings.maxBodyBytes) {
        const why = `not sent, its body is over ${this.settings.maxBodyBytes} bytes (push.maxBodyBytes)`
        this.report('PUSH_TOO_LARGE', `${where({ taskId, config })}: ${why}`, scope)
        continue
      }
      const hook = this.webhook(key, taskId, scope, config)
      hook.config = config
      hook.serializer = serializer
      this.count(hook, hook.queue.add({ ...serialized, kept }, task, this.maxQueued), `over push.maxQueued (${this.maxQueued})`)
      hook.draining ??= this.drain(key, config.id ?? '', hook)
    }
  }

  /** The webhook of `config` on the task under `key`, made when it has nothing in flight. */
  private webhook(key: string, taskId: string, scope: string, config: TaskPushNotificationConfig): Webhook {
    let hooks = this.webhooks.get(key)
    if (!hooks) this.webhooks.set(key, hooks = new Map())
    let hook = hooks.get(config.id ?? '')
    if (hook) return hook
    const made: Webhook = hook = {
      taskId, scope, config, serializer: this.serializers['1.0'],
      queue: new WebhookQueue((latest) => {
        try {
          const snapshot = made.serializer.serialize({ payload: { $case: 'task', value: latest } }, latest)
          return Buffer.byteLength(snapshot.body) > this.settings.maxBodyBytes ? undefined : snapshot
        } catch {
          return undefined
        }
      }),
    }
    hooks.set(config.id ?? '', hook)
    return hook
  }

  /** POSTs what the webhook has waiting, in order; after a delivery failed all its retries, what waits collapses. */
  private async drain(key: string, id: string, hook: Webhook): Promise<void> {
    try {
      for (let next = hook.queue.take(); next; next = hook.queue.take()) {
        // Never rejects: a delivery that threw is reported, and the webhook's later updates still go.
        const down = await this.deliver(hook, next).catch((error: Error) => {
          this.report('PUSH_FAILED', `${where(hook)}: ${error.message}`, hook.scope)
          return false
        })
        if (down) this.count(hook, hook.queue.collapse(this.maxQueued), 'after a delivery that failed all its retries')
      }
    } finally {
      hook.draining = undefined
      const hooks = this.webhooks.get(key)
      if (hooks?.get(id) === hook) hooks.delete(id)
      if (hooks && !hooks.size) this.webhooks.delete(key)
    }
  }

  private count(hook: Webhook, done: Collapsed | undefined, why: string): void {
    if (done?.coalesced) {
      this.skipped('PUSH_COALESCED', done.coalesced, `${where(hook)}: ${done.coalesced} waiting updates merged into the task's latest state (${why})`)
    }
    if (done?.dropped) {
      this.skipped('PUSH_DROPPED', done.dropped, `${where(hook)}: the ${done.dropped} oldest waiting updates dropped (${why})`)
    }
  }

  /** Resolves once every delivery queued now has ended (tests, stop), or after `within` ms. */
  async idle(within?: number): Promise<void> {
    const give = within === undefined ? undefined : sleep(within, undefined, { ref: false })
    while (this.pending.size || this.webhooks.size) {
      const drains = [...this.webhooks.values()].flatMap((hooks) => [...hooks.values()].map((hook) => hook.draining))
      const all = Promise.all([...this.pending, ...drains])
      if (!give) await all
      else if (await Promise.race([all.then(() => false), give.then(() => true)])) return
    }
  }

  /** One update to the webhook, with its retries; true if it failed them all (the webhook looks down). */
  private async deliver(hook: Webhook, update: Serialized): Promise<boolean> {
    const { config } = hook
    const fail = (code: PushFailureCode, message: string, down = false) => {
      this.report(code, `${where(hook)}: ${message}`, hook.scope)
      return down
    }
    const stopped = this.stopping.signal
    if (stopped.aborted) return fail('PUSH_FAILED', 'not delivered, the server stopped')
    const headers: Record<string, string> = { 'Content-Type': update.contentType, ...authHeaders(config) }
    for (let attempt = 0; ; attempt++) {
      let target: PinnedTarget
      try {
        target = await pinTarget(config.url, this.settings)
      } catch (error) {
        return fail(error instanceof TargetRefused ? error.code : 'PUSH_FAILED', (error as Error).message)
      }
      const outcome = await post(target, headers, update.body, this.settings.timeout, stopped)
      if (stopped.aborted) return fail('PUSH_FAILED', 'not delivered, the server stopped')
      if (typeof outcome === 'number' && outcome >= 200 && outcome < 300) {
        this.delivered()
        return false
      }
      if (typeof outcome === 'number' && outcome >= 300 && outcome < 400) {
        return fail('PUSH_REDIRECT_REFUSED', `answered HTTP ${outcome} (a redirect, not followed)`)
      }
      const retryable = typeof outcome !== 'number' || outcome === 408 || outcome === 429 || outcome >= 500
      if (!retryable) return fail('PUSH_REJECTED', `answered HTTP ${outcome}`)
      if (attempt >= this.settings.retries) {
        return fail('PUSH_FAILED', `${typeof outcome === 'number' ? `HTTP ${outcome}` : outcome.message}, after ${attempt + 1} attempts`, true)
      }
      const waited = await sleep(this.settings.retryDelay * 2 ** attempt, true, { signal: stopped }).catch(() => false)
      if (!waited) return fail('PUSH_FAILED', 'not delivered, the server stopped')
    }
  }
}

/** How a log line names a webhook's notification. */
function where(hook: { taskId: string; config: TaskPushNotificationConfig }): string {
  return `push notification for task ${hook.taskId} to ${safeUrl(hook.config.url)}`
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
