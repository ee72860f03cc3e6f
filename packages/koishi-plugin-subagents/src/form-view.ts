// The console's form reads every nested object, list and table of a config as a value: one the component leaves
// unset by default (subagent-tool's `agentOptions`, `toolFilter`, `budget`, `output`) makes the form throw in the
// browser (`Cannot read properties of undefined`) and leaves the section blank. So the form is shown an empty
// value as their default, and what the form saves back untouched (an empty object, list or table where the
// component's default is unset) is taken out again before the component sees it: unset stays unset.
import { Schema } from 'cordis'

const EMPTY: Record<string, () => unknown> = { object: () => ({}), dict: () => ({}), array: () => [] }

const unset = (schema: Schema) => schema.meta.default === undefined && schema.type in EMPTY

/**
 * The schema as the form shows it: every unset nested object, table and list has an empty default. The console
 * checks the whole value against it before it saves, so inside such an object (which may stay empty) nothing is
 * required: the component still requires it when the object is given.
 */
export function formView(schema: Schema, optional = false): Schema {
  if (schema.type !== 'object') {
    const shown = unset(schema) ? schema.default(EMPTY[schema.type]()) : schema
    return optional && shown.meta.required ? shown.required(false) : shown
  }
  const inside = optional || unset(schema)
  const dict: Record<string, Schema> = {}
  for (const [key, field] of Object.entries(schema.dict!)) dict[key] = formView(field, inside)
  const shown = Schema.object(dict)
  shown.meta = { ...schema.meta, required: optional ? false : schema.meta.required }
  return unset(schema) ? shown.default({}) : shown
}

/**
 * A switchable section as the form shows it (Koishi's own pattern): the switch, and the fields only while it is
 * on. The console checks the value before it saves; a section that is off is checked against nothing.
 */
export function switchable(body: Schema, enabled: boolean): Schema {
  const toggle = Schema.boolean().default(enabled).description('Load this section.')
  const on = Schema.object({ enabled: enabled ? Schema.const(true) : Schema.const(true).required(), ...body.dict })
  const off = enabled ? Schema.object({ enabled: Schema.const(false).required() }) : Schema.object({})
  return Schema.intersect([Schema.object({ enabled: toggle }), Schema.union([on, off])])
}

/** Nothing the user gave: no value, an empty one, or (inside an object) only the fields' own defaults. */
function isEmpty(value: unknown, field?: Schema): boolean {
  if (Array.isArray(value)) return value.length === 0
  if (value === null || typeof value !== 'object') return value === undefined || (field !== undefined && value === field.meta.default)
  const dict = field?.type === 'object' ? field.dict! : {}
  return Object.entries(value).every(([key, item]) => isEmpty(item, dict[key]))
}

/** A saved value with what the form filled in taken out: an empty value of a field whose default is unset. */
export function prune(value: unknown, fields: Record<string, Schema>): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value
  const result: Record<string, unknown> = { ...value }
  for (const [key, field] of Object.entries(fields)) {
    if (!(key in result)) continue
    if (field.type === 'object') result[key] = prune(result[key], field.dict!)
    if (unset(field) && isEmpty(result[key], field)) delete result[key]
  }
  return result
}
