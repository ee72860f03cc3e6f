/**
 * The webhooks clients set on their tasks (A2A `TaskPushNotificationConfig`), kept in this process and bounded: each
 * checked when set (URL syntax and length, id length, credential), at most `maxConfigsPerTask` per task, and kept only
 * for tasks the server keeps: a task's webhooks go when the task store forgets it, and past `maxTasks` tasks with
 * webhooks the least recently set ones that are not running go first. Filed under the task store's own key (tenant,
 * credential, task id), so one credential never reaches another's.
 */
import { validateHeaderValue } from 'node:http'
import type { TaskPushNotificationConfig } from '@a2a-js/sdk'
import { RequestMalformedError, UnsupportedOperationError } from '@a2a-js/sdk/errors'
import type { PushNotificationStore, ServerCallContext } from '@a2a-js/sdk/server'
import { type TargetPolicy, urlProblem } from './push-target.js'
import { taskKey } from './task-store.js'

/** Longest credential a webhook's header carries (the token, or the authentication's scheme and credentials). */
const MAX_CREDENTIAL_CHARS = 4096
/** Longest webhook URL. */
const MAX_PUSH_URL_CHARS = 4096
/** Longest config id a client may choose. */
const MAX_PUSH_CONFIG_ID_CHARS = 256
/** The wire version of a config set without one (the SDK's rule). */
const LEGACY_WIRE_VERSION = '0.3'

/** A webhook with the A2A wire version it was set over (its notifications keep that body shape). */
interface StoredPushNotificationConfig { config: TaskPushNotificationConfig; wireVersion: string }

export interface PushStoreBounds extends TargetPolicy {
  maxConfigsPerTask: number
  /** Tasks with webhooks kept at once (the server's `maxStoredTasks`). */
  maxTasks: number
  /** Whether the task under this key runs now (its webhooks are never dropped for room). */
  isRunning: (key: string) => boolean
  /** The webhooks of the task under this key went (forgotten, or dropped for room): what still waits for them goes too. */
  forgotten?: (key: string) => void
  /** One webhook of the task under this key was deleted: what still waits for it goes too. */
  deleted?: (key: string, configId: string) => void
}

export class CappedPushStore implements PushNotificationStore {
  /** By task key, least recently set first. */
  private readonly tasks = new Map<string, StoredPushNotificationConfig[]>()

  constructor(private readonly bounds: PushStoreBounds) {}

  /** Tasks with webhooks kept now. */
  get size(): number {
    return this.tasks.size
  }

  async save(taskId: string, context: ServerCallContext, config: TaskPushNotificationConfig): Promise<void> {
    const problem = configProblem(config, this.bounds)
    if (problem) throw new RequestMalformedError({ message: `Refused: ${problem.message}.`, metadata: { code: problem.code } })
    const key = taskKey(context, taskId)
    const entries = this.tasks.get(key) ?? []
    const others = entries.filter((entry) => !config.id || entry.config.id !== config.id)
    if (others.length >= this.bounds.maxConfigsPerTask) {
      throw new UnsupportedOperationError({
        message: `Refused: task ${taskId} already has ${others.length} push notification configs (push.maxConfigsPerTask); delete one first.`,
        metadata: { code: 'TOO_MANY_PUSH_CONFIGS' },
      })
    }
    // The SDK reads the id it gives back from the config it passed.
    if (!config.id) config.id = crypto.randomUUID()
    others.push({ config: structuredClone(config), wireVersion: context.requestedVersion || LEGACY_WIRE_VERSION })
    this.tasks.delete(key)
    this.tasks.set(key, others)
    this.trim()
  }

  async load(taskId: string, context: ServerCallContext): Promise<TaskPushNotificationConfig[]> {
    return (this.tasks.get(taskKey(context, taskId)) ?? []).map((entry) => structuredClone(entry.config))
  }

  async loadWithMetadata(taskId: string, context: ServerCallContext): Promise<StoredPushNotificationConfig[]> {
    return (this.tasks.get(taskKey(context, taskId)) ?? []).map((entry) => structuredClone(entry))
  }

  /** Deletes one webhook of the task (`configId`; without one, the SDK's rule: the id equal to the task id). */
  async delete(taskId: string, context: ServerCallContext, configId = taskId): Promise<void> {
    const key = taskKey(context, taskId)
    const left = (this.tasks.get(key) ?? []).filter((entry) => entry.config.id !== configId)
    if (left.length) this.tasks.set(key, left)
    else this.tasks.delete(key)
    this.bounds.deleted?.(key, configId)
  }

  /** The task under `key` was forgotten (evicted or dropped): its webhooks go with it. */
  forget(key: string): void {
    if (this.tasks.delete(key)) this.bounds.forgotten?.(key)
  }

  clear(): void {
    this.tasks.clear()
  }

  private trim(): void {
    if (this.tasks.size <= this.bounds.maxTasks) return
    for (const key of this.tasks.keys()) {
      if (this.tasks.size <= this.bounds.maxTasks) return
      if (!this.bounds.isRunning(key)) this.forget(key)
    }
  }
}

/** The authentication headers of a webhook: `authentication` as `Authorization`, else the token in `X-A2A-Notification-Token`. */
export function authHeaders(config: TaskPushNotificationConfig): Record<string, string> {
  const auth = config.authentication
  if (auth?.scheme && auth.credentials) return { Authorization: `${auth.scheme} ${auth.credentials}` }
  if (config.token) return { 'X-A2A-Notification-Token': config.token }
  return {}
}

/** Why a config cannot be kept, checked when it is set, with its code. */
function configProblem(config: TaskPushNotificationConfig, policy: TargetPolicy): { code: string; message: string } | undefined {
  if (typeof config.url !== 'string' || config.url.length > MAX_PUSH_URL_CHARS) {
    return { code: 'PUSH_TARGET_REFUSED', message: `the push notification url must be a string of at most ${MAX_PUSH_URL_CHARS} characters` }
  }
  const problem = urlProblem(config.url, policy)
  if (problem) return { code: 'PUSH_TARGET_REFUSED', message: problem }
  if (config.id !== undefined && (typeof config.id !== 'string' || config.id.length > MAX_PUSH_CONFIG_ID_CHARS)) {
    return { code: 'PUSH_CONFIG_REFUSED', message: `the push notification config id must be a string of at most ${MAX_PUSH_CONFIG_ID_CHARS} characters` }
  }
  for (const [name, value] of Object.entries(authHeaders(config))) {
    if (value.length > MAX_CREDENTIAL_CHARS) {
      return { code: 'PUSH_CREDENTIAL_REFUSED', message: `the push notification's credential (${name}) is over ${MAX_CREDENTIAL_CHARS} characters` }
    }
    try {
      validateHeaderValue(name, value)
    } catch {
      return {
        code: 'PUSH_CREDENTIAL_REFUSED',
        message: `the push notification's credential (${name}) holds a character a header cannot carry (a control character, or text beyond Latin-1)`,
      }
    }
  }
  return undefined
}
