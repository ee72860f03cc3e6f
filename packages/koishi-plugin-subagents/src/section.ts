// One section of the form: what the console renders is the component's own schema (its fields, descriptions,
// defaults and secrets), but a value that schema refuses does not fail the whole form. It passes through
// unchanged, so the component's own load refuses it (loud: Koishi logs the error, that section's scope is
// failed) while every other section runs. Without this, one bad field would stop the whole package.
import { Schema } from 'cordis'
import { switchable } from './form-view.js'

/** The schemastery type of a section; what the console sees is the component's schema (toJSON). */
const SECTION_TYPE = 'cordis-subagents:section'

interface SectionSchema extends Schema {
  /** The component's own fields (and `enabled`): a good value is resolved with them. */
  inner: Schema
}

Schema.extend(SECTION_TYPE, (data, schema, options, strict) => {
  const { inner } = schema as unknown as SectionSchema
  try {
    return Schema.resolve(data, inner, options, strict)
  } catch (error) {
    if (!Schema.ValidationError.is(error)) throw error
    // The component validates it again when its section loads, and fails there with the same message.
    return [data]
  }
})

/** The fields of an object schema, or of an intersection of object schemas. */
function fields(schema: Schema): Record<string, Schema> {
  if (schema.type === 'intersect') return Object.assign({}, ...schema.list!.map(fields)) as Record<string, Schema>
  return { ...schema.dict }
}

/**
 * Wraps a component's object schema (or an intersection of them) as a form section, one flat object the console
 * renders as one group. `enabled` adds an on/off switch first (the key is not passed to the component): an
 * optional component, off by default, is a section with `enabled: false`.
 */
export function section(inner: Schema, enabled?: boolean): Schema {
  const switches = enabled === undefined ? {} : { enabled: Schema.boolean().default(enabled).description('Load this section.') }
  const own = Schema.object({ ...switches, ...fields(inner) }).default({})
  const shown = enabled === undefined ? own : switchable(Schema.object(fields(inner)), enabled).default({})
  const schema = new Schema({ type: SECTION_TYPE } as Schema) as SectionSchema
  schema.inner = own
  schema.meta = { ...shown.meta }
  // The console and Koishi's config writer see the component's schema, not the wrapper.
  Object.defineProperties(schema, {
    toJSON: { value: () => shown.toJSON(), enumerable: false },
    simplify: { value: (value: unknown) => shown.simplify(value), enumerable: false },
    toString: { value: (inline?: boolean) => shown.toString(inline), enumerable: false },
  })
  return schema
}
