import { Builder } from '@minatojs/sql-utils'
import type { Driver, Model, RegExpLike, Type } from 'minato'

/** Double-quoted identifier, quotes inside doubled (PostgreSQL's rule). */
export function quoteId(name: string): string {
  return '"' + name.replace(/"/g, '""') + '"'
}

/** One statement: its text with `$1`.. placeholders and the values they stand for. */
export interface Statement {
  text: string
  params: unknown[]
}

/** A quoted identifier, a quoted literal, or a placeholder (the only token captured). */
const TOKEN = /"(?:[^"]|"")*"|'(?:[^']|'')*'|\$(\d+)/g

/**
 * minato's SQL builder speaking PostgreSQL for the scalar subset this driver supports:
 * double-quoted identifiers, real booleans in WHERE, `~` for regexes, and every string, JSON,
 * date or regex value as a bind parameter (`$n`), never spliced into the text, so no server
 * setting (standard_conforming_strings) can change what a value means. Numbers and booleans
 * are written by minato from JS numbers and booleans. One builder builds one statement.
 */
export class PostgresBuilder extends Builder {
  protected override $true = 'TRUE'
  protected override $false = 'FALSE'
  /** The values of `$1`.. as the builder met them (some may end up unused: see `statement`). */
  private readonly values: unknown[] = []

  /** `inline` writes values as E'' literals instead, for DDL (DEFAULT), which takes no parameters. */
  constructor(driver: Driver, tables?: Record<string, Model>, private readonly inline = false) {
    super(driver, tables)
  }

  override quote(value: string): string {
    // E'' reads backslashes as escapes under any standard_conforming_strings, so doubling both is exact.
    if (this.inline) return "E'" + value.replace(/\\/g, '\\\\').replace(/'/g, "''") + "'"
    this.values.push(value)
    return `$${this.values.length}`
  }

  override escapeId(value: string): string {
    return quoteId(value)
  }

  override escapePrimitive(value: unknown, type?: Type): string {
    if (value instanceof Date) return this.quote(value.toISOString())
    if (value instanceof RegExp) return this.quote(value.source)
    return super.escapePrimitive(value, type)
  }

  /**
   * The statement for `text` (built by this builder): placeholders renumbered in order of use
   * with their values. minato drops parts it built (a condition that cannot match, a field list
   * it inlines), and PostgreSQL refuses a parameter the text never names.
   */
  statement(text: string): Statement {
    const params: unknown[] = []
    const renamed = new Map<string, string>()
    const renumbered = text.replace(TOKEN, (token, index?: string) => {
      if (index === undefined) return token
      let name = renamed.get(index)
      if (name === undefined) {
        params.push(this.values[Number(index) - 1])
        name = `$${params.length}`
        renamed.set(index, name)
      }
      return name
    })
    return { text: renumbered, params }
  }

  protected override createRegExpQuery(key: string, value: string | RegExpLike): string {
    const source = typeof value === 'string' ? value : value.source
    const insensitive = typeof value !== 'string' && value.flags?.includes('i')
    return `${key} ${insensitive ? '~*' : '~'} ${this.escape(source)}`
  }
}
