import { peerText } from '@cordis-subagents/shared'

// A server's input schema as the model (and a person reading the tools) sees it: every annotation
// string (description, title, $comment, enum descriptions, vendor keywords) cleaned by shared's
// `peerText`. Values the server checks are kept exact, or its own validation would refuse what the
// model sends: enum, const, default, examples, patterns, formats, types, references, required names
// and property names.

/** Keywords whose strings are data the server validates against, not text for a reader. */
const DATA = new Set([
  'enum', 'const', 'default', 'examples', 'required', 'pattern', 'format', 'type', '$ref', '$id', '$anchor', '$schema',
  '$dynamicRef', '$dynamicAnchor', 'contentEncoding', 'contentMediaType', 'dependentRequired', 'dependencies',
])
/** Keywords holding a map of names (kept) to schemas. */
const MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'])

type Node = Record<string, unknown> | unknown[]

/**
 * A copy of `schema` with every annotation string cleaned. Iterative (a deeply nested schema
 * cannot overflow the stack) and linear in its size; the caller bounds the size.
 */
export function peerSchema(schema: Record<string, unknown>): Record<string, unknown> {
  const root = { ...schema }
  const stack: { node: Node; map: boolean }[] = [{ node: root, map: false }]
  const visit = (value: unknown, map: boolean): unknown => {
    if (typeof value === 'string') return peerText(value)
    if (!value || typeof value !== 'object') return value
    const copy: Node = Array.isArray(value) ? [...value] : { ...value as Record<string, unknown> }
    stack.push({ node: copy, map })
    return copy
  }
  while (stack.length) {
    const { node, map } = stack.pop()!
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) node[i] = visit(node[i], false)
      continue
    }
    for (const key of Object.keys(node)) {
      if (map) node[key] = visit(node[key], false)
      else if (!DATA.has(key)) node[key] = visit(node[key], MAPS.has(key))
    }
  }
  return root
}
