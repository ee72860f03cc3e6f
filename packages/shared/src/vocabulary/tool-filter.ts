import { isName, NAME_RULE } from './names.js'

/** Which of the parent's tools a child may see: only `allow` (when given), never `deny`. */
export interface ToolFilter {
  allow?: string[]
  deny?: string[]
}

/**
 * What is wrong with `filter` as a tool filter, as a sentence naming `label` (e.g.
 * `request.toolFilter`), or `undefined` when it is fine.
 *
 * Loose (the registry's `view` / `restrict`): an object whose `allow` / `deny`, when present, are
 * arrays of strings. Strict (a filter a caller or an operator wrote for a child): also no unknown
 * keys, every entry a tool name, and at least one of `allow` / `deny` (an empty filter is a
 * mistake: omit it to keep every tool).
 */
export function toolFilterProblem(filter: unknown, label: string, strict = false): string | undefined {
  if (typeof filter !== 'object' || filter === null || (strict && Array.isArray(filter))) {
    return `${label} must be an object { allow?, deny? } of tool-name arrays.`
  }
  const record = filter as Record<string, unknown>
  if (strict) {
    for (const key of Object.keys(record)) {
      if (key !== 'allow' && key !== 'deny' && record[key] !== undefined) {
        return `${label} has an unknown key "${key}"; only allow and deny are understood.`
      }
    }
  }
  for (const key of ['allow', 'deny'] as const) {
    const list = record[key]
    if (list === undefined) continue
    if (!Array.isArray(list)) return `${label}.${key} must be an array of tool names.`
    for (let index = 0; index < list.length; index++) {
      const name: unknown = list[index]
      if (typeof name !== 'string') return `${label}.${key} must be an array of tool names.`
      if (strict && !isName(name)) {
        return `${label}.${key}[${index}] is ${JSON.stringify(name)}, which is not a tool name (${NAME_RULE}).`
      }
    }
  }
  if (strict && record.allow === undefined && record.deny === undefined) {
    return `${label} is empty (neither allow nor deny); omit it to keep the parent's tools.`
  }
  return undefined
}
