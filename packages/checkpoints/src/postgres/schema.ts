import { isNullable, makeArray } from 'cosmokit'
import { Field, Model } from 'minato'
import { quoteId } from './builder.js'

/** The field types this driver stores; anything else fails `prepare` with a message naming the field. */
function columnType(field: Field, autoIncrement: boolean): string {
  const { deftype, length, precision, scale } = field
  switch (deftype) {
    case 'primary':
    case 'unsigned':
    case 'integer':
      if (autoIncrement) return 'bigserial'
      return deftype === 'integer' && (length ?? 4) <= 4 ? 'integer' : 'bigint'
    case 'bigint': return 'bigint'
    case 'float':
    case 'double': return 'double precision'
    case 'decimal': return `numeric(${precision ?? 10}, ${scale ?? 0})`
    case 'boolean': return 'boolean'
    case 'char':
    case 'string': return `varchar(${length ?? 255})`
    case 'text':
    case 'json':
    case 'list': return 'text'
    case 'date':
    case 'timestamp': return 'timestamptz'
    default: throw new Error(`the PostgreSQL driver does not store fields of type "${deftype}"`)
  }
}

export interface ColumnPlan {
  /** Full column definitions, for CREATE TABLE. */
  columns: string[]
  /** PRIMARY KEY / UNIQUE clauses, for CREATE TABLE. */
  constraints: string[]
  /** Column names in model order (missing ones are added with ALTER TABLE ADD COLUMN). */
  names: string[]
}

export function planTable(model: Model, escapeDefault: (key: string, value: unknown) => string): ColumnPlan {
  const columns: string[] = []
  const names: string[] = []
  const primary = makeArray(model.primary)
  for (const [key, field] of Object.entries(model.fields)) {
    if (!Field.available(field)) continue
    const autoIncrement = !!model.autoInc && primary.length === 1 && primary[0] === key
    let def = `${quoteId(key)} ${columnType(field!, autoIncrement)}`
    if (!autoIncrement) {
      def += field!.nullable === false ? ' NOT NULL' : ' NULL'
      if (!isNullable(field!.initial)) def += ` DEFAULT ${escapeDefault(key, field!.initial)}`
    }
    columns.push(def)
    names.push(key)
  }
  const constraints = [`PRIMARY KEY (${primary.map(quoteId).join(', ')})`]
  for (const keys of model.unique) constraints.push(`UNIQUE (${makeArray(keys).map(quoteId).join(', ')})`)
  return { columns, constraints, names }
}
