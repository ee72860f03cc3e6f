/** Whether a value is an object at all (not null; arrays included): the first check of a value read from outside. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null
}

/** Whether a value read from outside is a plain object (not null, not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === 'object' && !Array.isArray(value)
}
