// One section of the form: what the console renders is the component's own schema (its fields, descriptions,
// defaults and secrets), but a value that schema refuses does not fail the whole form. It passes through
// unchanged, so the component's own load refuses it (loud: Koishi logs the error, that section's scope is
// failed) while every other section runs. Without this, one bad field would stop the whole package.
import { Schema } from 'cordis'

/** The schemastery type of a section; what the console sees is the component's schema (toJSON). */
const SECTION_TYPE = 'cordis-subagents:section'

interface SectionSchema extends Schema {
  /** The schema the console renders and a good value is resolved with. */
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

/**
 * Wraps a component's object schema as a form section. `enabled` adds an on/off switch (the key is not
 * passed to the component): an optional component, off by default, is a section with `enabled: false`.
 */
export function section(inner: Schema, description: string, enabled?: boolean): Schema {
  const shown = (enabled === undefined ? inner : Schema.intersect([
    Schema.object({ enabled: Schema.boolean().default(enabled).description('Load this section.') }),
    inner,
  ])).description(description).default({})
  const schema = new Schema({ type: SECTION_TYPE } as Schema) as SectionSchema
  schema.inner = shown
  schema.meta = { ...shown.meta }
  // The console and Koishi's config writer see the component's schema, not the wrapper.
  Object.defineProperties(schema, {
    toJSON: { value: () => shown.toJSON(), enumerable: false },
    simplify: { value: (value: unknown) => shown.simplify(value), enumerable: false },
    toString: { value: (inline?: boolean) => shown.toString(inline), enumerable: false },
  })
  return schema
}
