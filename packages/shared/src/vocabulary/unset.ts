// A config group (an object of fields), list or table that may be left unset, for every config schema.
import { Schema } from 'cordis'

/** Its own schemastery type: resolved as the schema it wraps (with that schema's own messages), shown as a union. */
const UNSET_GROUP = 'cordis-subagents:unset-group'

Schema.extend(UNSET_GROUP, (data, { inner }, options, strict) => Schema.resolve(data, inner!, options, strict))

/** What the console sees (its JSON): a union of the one choice, which it renders from that choice's own default. */
function toJSON(this: Schema) {
  const shown = Schema.union([this.inner!])
  shown.meta = { ...this.meta }
  return shown.toJSON()
}

function toString(this: Schema, inline?: boolean) {
  return this.inner!.toString(inline)
}

/**
 * `schema` (an object, array or dict) as an optional field whose value stays unset when it is not given: no `{}`
 * or `[]` is filled in, so a group left out stays unlike one given empty (an empty tool filter is refused;
 * an unset one gives every tool). A value given is checked by `schema`, with its messages. Koishi's console
 * (schemastery-vue) renders a nested object, list or table from its default and fails on one whose default is
 * unset; this one it is shown as a union of one choice, rendered from that choice's own default (`{}`, `[]`), and
 * nothing is written back while it is left untouched.
 */
export function unsetGroup<S, T>(schema: Schema<S, T>): Schema<S | undefined, T | undefined> {
  const group = new Schema({ type: UNSET_GROUP } as Schema)
  group.inner = schema as Schema
  group.meta = schema.meta.description === undefined ? {} : { description: schema.meta.description }
  // Own properties, so the copies `.description()` and the like make keep them.
  Object.assign(group, { toJSON, toString })
  return group as unknown as Schema<S | undefined, T | undefined>
}
