/**
 * Whether parsed config has more than `limit` values (objects, arrays and scalars), counting a
 * value again each time it is reached. A YAML alias is the same object under another key, so this
 * is the size the file expands to: what copying (`!!js` interpolation) or comparing it would walk.
 * It stops at `limit + 1`, however large the expansion (an alias bomb of a few hundred bytes).
 */
export function exceedsValues(data: unknown, limit: number): boolean {
  const stack: unknown[] = [data]
  let count = 0
  while (stack.length) {
    const value = stack.pop()
    if (++count > limit) return true
    if (!value || typeof value !== 'object') continue
    if (Array.isArray(value)) {
      for (const item of value) stack.push(item)
    } else {
      for (const key in value) {
        if (Object.hasOwn(value, key)) stack.push((value as Record<string, unknown>)[key])
      }
    }
  }
  return false
}
