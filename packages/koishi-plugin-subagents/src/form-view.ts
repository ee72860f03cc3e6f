// How a switchable section shows in the console's form. (The components' own schemas render there as they are:
// a group they leave unset is an `unsetGroup` of @cordis-subagents/shared.)
import { Schema } from 'cordis'

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
