/** Whether a value read from outside is a plain object (not null, not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === 'object' && !Array.isArray(value)
}
