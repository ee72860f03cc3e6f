import { Builder } from '@minatojs/sql-utils'
import type { RegExpLike, Type } from 'minato'

/** Double-quoted identifier, quotes inside doubled (PostgreSQL's rule). */
export function quoteId(name: string): string {
  return '"' + name.replace(/"/g, '""') + '"'
}

/**
 * minato's SQL builder speaking PostgreSQL for the scalar subset this driver supports:
 * double-quoted identifiers, standard string literals, real booleans in WHERE, `~` for regexes.
 */
export class PostgresBuilder extends Builder {
  protected override escapeMap = { "'": "''" }
  protected override $true = 'TRUE'
  protected override $false = 'FALSE'

  override escapeId(value: string): string {
    return quoteId(value)
  }

  override escapePrimitive(value: unknown, type?: Type): string {
    if (value instanceof Date) return this.quote(value.toISOString())
    if (value instanceof RegExp) return this.quote(value.source)
    return super.escapePrimitive(value, type)
  }

  protected override createRegExpQuery(key: string, value: string | RegExpLike): string {
    const source = typeof value === 'string' ? value : value.source
    const insensitive = typeof value !== 'string' && value.flags?.includes('i')
    return `${key} ${insensitive ? '~*' : '~'} ${this.escape(source)}`
  }
}
