import { isRecord } from '@cordis-subagents/shared'

/** Longest `tenant` accepted, in UTF-8 bytes (a task is filed under it; PostgreSQL keys and notifications are bounded). */
const MAX_TENANT_BYTES = 256
/** Longest task, context or message id accepted from a client, in UTF-8 bytes (ours are 36-character UUIDs). */
const MAX_ID_BYTES = 256

/**
 * What is wrong with a JSON-RPC request's params before any task is read or started, or undefined:
 * a NUL character or a lone surrogate anywhere (PostgreSQL text and JSONB can hold neither, so a task
 * carrying one could never be saved, while its agent ran), or a tenant or id longer than the bounds above. Linear in the body (capped by
 * `maxBodyBytes`), without recursion (a deeply nested body cannot overflow the stack).
 */
export function paramsProblem(params: unknown): string | undefined {
  if (!isRecord(params)) return undefined
  const message = isRecord(params.message) ? params.message : {}
  const ids: Array<[string, unknown]> = [
    ['id', params.id], ['contextId', params.contextId], ['message.taskId', message.taskId], ['message.contextId', message.contextId],
    ['message.messageId', message.messageId],
  ]
  // Strings or absent, as A2A has them: a value of another kind (a deeply nested array) reaches nothing past here.
  for (const [name, value] of [['tenant', params.tenant], ...ids] as Array<[string, unknown]>) {
    if (value !== undefined && value !== null && typeof value !== 'string') return `${name} must be a string.`
  }
  // A count of messages: a whole number (the SDK passes anything else on as NaN or a fraction, which a store cannot page by).
  const history = params.historyLength ?? undefined
  if (history !== undefined && !(Number.isSafeInteger(Number(history)) && Number(history) >= 0)) {
    return 'historyLength must be a whole number of messages.'
  }
  if (typeof params.tenant === 'string' && Buffer.byteLength(params.tenant) > MAX_TENANT_BYTES) {
    return `tenant is longer than ${MAX_TENANT_BYTES} bytes; use a shorter tenant name.`
  }
  for (const [name, value] of ids) {
    if (typeof value === 'string' && Buffer.byteLength(value) > MAX_ID_BYTES) return `${name} is longer than ${MAX_ID_BYTES} bytes; ids this server hands out are UUIDs.`
  }
  for (const [key, value] of Object.entries(params)) {
    const found = unstorable(key) ? key : unstorableIn(value)
    if (found !== undefined) return `${found === key ? 'a field name' : key} holds ${WHAT[unstorable(found)!]}, which this server does not store; remove it.`
  }
  return undefined
}

const WHAT = { nul: 'a NUL character (U+0000)', surrogate: 'a lone surrogate (half of a UTF-16 pair, no character)' }

/** Why `text` cannot be stored as PostgreSQL text, or undefined. */
function unstorable(text: string): keyof typeof WHAT | undefined {
  if (text.includes('\u0000')) return 'nul'
  return (text as string & { isWellFormed(): boolean }).isWellFormed() ? undefined : 'surrogate'
}

/** The first string (a key or a value) in `root` that cannot be stored, or undefined. */
function unstorableIn(root: unknown): string | undefined {
  const stack: unknown[] = [root]
  while (stack.length) {
    const value = stack.pop()
    if (typeof value === 'string') {
      if (unstorable(value)) return value
    } else if (Array.isArray(value)) {
      for (const item of value) stack.push(item)
    } else if (value && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        if (unstorable(key)) return key
        stack.push(item)
      }
    }
  }
  return undefined
}

