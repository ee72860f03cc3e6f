/** Whether a value is an object at all (not null; arrays included): the first check of a value read from outside. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null
}

/** Whether a value read from outside is a plain object (not null, not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === 'object' && !Array.isArray(value)
}

/**
 * How deep a value read from outside nests objects and arrays (a primitive: 0, `{}`: 1), without recursion, so a value
 * thousands deep cannot overflow the stack here; it stops once past `limit` and says `limit + 1`.
 */
export function nestingDepth(root: unknown, limit: number): number {
  if (!isObject(root)) return 0
  let deepest = 1
  const stack: Array<[object, number]> = [[root, 1]]
  while (stack.length) {
    const [value, depth] = stack.pop()!
    if (depth > limit) return limit + 1
    if (depth > deepest) deepest = depth
    for (const item of Object.values(value)) if (isObject(item)) stack.push([item, depth + 1])
  }
  return deepest
}
