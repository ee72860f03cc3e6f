import type { Task } from '@a2a-js/sdk'

/** Marks bytes (a file part's `raw` content) in stored JSON, as base64. */
const BYTES = '$bytes'

/** A task as JSON text for the shared store: bytes become `{ "$bytes": base64 }`, undefined fields drop. */
export function encodeTask(task: Task): string {
  return encode(task)
}

/** The size of a value as stored JSON (bytes as base64), in bytes. */
export function encodedBytes(value: unknown): number {
  return Buffer.byteLength(encode(value) ?? '')
}

function encode(value: unknown): string {
  return JSON.stringify(value, function (this: Record<string, unknown>, key, value) {
    const original = this[key]
    return original instanceof Uint8Array ? { [BYTES]: Buffer.from(original).toString('base64') } : value
  })
}

/** The task back from its stored JSON text (bytes as Buffers, what the SDK's types say). */
export function decodeTask(text: string): Task {
  return JSON.parse(text, (_key, value) => {
    if (value && typeof value === 'object' && typeof value[BYTES] === 'string' && Object.keys(value).length === 1) return Buffer.from(value[BYTES], 'base64')
    return value
  }) as Task
}
