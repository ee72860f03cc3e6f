// Whether a freshly read config file may replace the running one: its shape, then every enabled
// entry's config against its plugin's schema, before the loader sees any of it.
import { Entry } from '@cordisjs/loader'
import { describeError, headChars, stripControl } from '@cordis-subagents/shared'
import type { RejectCode } from './errors.js'
import type { EntryOptions, LoaderView } from './loader-view.js'

export interface Problem {
  code: RejectCode
  /** One line, without the file name. */
  reason: string
  /** 1-based line of the file, when known. */
  line?: number
}

export interface Checked {
  entries: EntryOptions[]
  /** Entries without an `id`: the loader restarts them at every reload. */
  withoutId: string[]
}

const GROUP = Symbol.for('cordis.group')

/** The shape the loader needs: a list of entries, each with a `name`, ids unique. */
export function checkShape(data: unknown, text: string): Problem | Checked {
  if (!Array.isArray(data)) {
    return { code: 'CONFIG_SHAPE', reason: 'the file must be a list of entries (`- id: …` / `name: …`), not ' + describeShape(data) }
  }
  const seen = new Map<string, number>()
  const withoutId: string[] = []
  for (const [index, item] of data.entries()) {
    if (!item || typeof item !== 'object' || Array.isArray(item)) {
      return { code: 'CONFIG_SHAPE', reason: `entry ${index + 1} is ${describeShape(item)}, not a mapping with a name` }
    }
    const options = item as Partial<EntryOptions>
    if (options.id !== undefined && typeof options.id !== 'string') {
      return { code: 'CONFIG_SHAPE', reason: `entry ${index + 1}: its id must be a string (quote it)`, line: lineOfEntry(text, String(options.id)) }
    }
    if (typeof options.name !== 'string' || !options.name) {
      return { code: 'CONFIG_SHAPE', reason: `entry ${options.id ? `"${options.id}"` : index + 1} has no name (the plugin's package)`, line: options.id ? lineOfEntry(text, options.id) : undefined }
    }
    if (!options.id) {
      withoutId.push(options.name)
      continue
    }
    const first = seen.get(options.id)
    if (first !== undefined) {
      return { code: 'CONFIG_SHAPE', reason: `id "${options.id}" is used by entries ${first + 1} and ${index + 1}; ids must be unique`, line: lineOfEntry(text, options.id, 2) }
    }
    seen.set(options.id, index)
  }
  return { entries: data as EntryOptions[], withoutId }
}

/**
 * Every enabled entry's config against its plugin's schema (the plugin running now, or the one the
 * loader would import). `!!js` expressions are evaluated the way the loader evaluates them; an entry
 * whose expression cannot be evaluated yet (it reads a service that is not there) is left to the
 * loader, which reports it when it applies the entry.
 */
export async function checkEntries(loader: LoaderView, entries: EntryOptions[], text: string): Promise<Problem | undefined> {
  for (const options of entries) {
    if (options.disabled) continue
    const label = `entry ${options.id ? `"${options.id}" ` : ''}(${options.name})`
    const line = options.id ? lineOfEntry(text, options.id) : undefined
    const running = options.id ? loader.store[options.id] : undefined
    let plugin: unknown
    if (running?.fork && running.options.name === options.name) {
      plugin = running.fork.runtime.plugin
    } else {
      try {
        plugin = loader.unwrapExports(await loader.import(options.name))
      } catch (error) {
        return { code: 'CONFIG_ENTRY_IMPORT', reason: `${label}: cannot import "${options.name}": ${oneLine(error)}`, line }
      }
    }
    const schema = schemaOf(plugin)
    if (!schema) continue
    let config: unknown
    try {
      // A new entry's expressions see what a root entry of the loader sees.
      const evaluate = running
        ? (expr: string) => running.evaluate(expr)
        : (expr: string) => Entry.prototype.evaluate.call({ ctx: loader.ctx } as never, expr)
      config = interpolate(options.config, evaluate)
    } catch {
      continue
    }
    try {
      schema(config)
    } catch (error) {
      return { code: 'CONFIG_ENTRY_SCHEMA', reason: `${label}: ${oneLine(error)}`, line }
    }
  }
  return undefined
}

/** What cordis would validate the config with; none for a group (its config is a list of entries). */
function schemaOf(plugin: unknown): ((config: unknown) => unknown) | undefined {
  if (!plugin || (typeof plugin !== 'object' && typeof plugin !== 'function')) return undefined
  const candidate = plugin as { Config?: unknown; schema?: unknown; [GROUP]?: unknown }
  if (candidate[GROUP] || candidate.schema === false) return undefined
  const schema = candidate.Config ?? candidate.schema
  return typeof schema === 'function' ? schema as (config: unknown) => unknown : undefined
}

function interpolate(value: unknown, evaluate: (expr: string) => unknown): unknown {
  if (!value || typeof value !== 'object') return value
  if ('__jsExpr' in value) return evaluate(String((value as { __jsExpr: unknown }).__jsExpr))
  if (Array.isArray(value)) return value.map((item) => interpolate(item, evaluate))
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, interpolate(item, evaluate)]))
}

/** The 1-based line of the `nth` `id: <id>` line of `text`. */
export function lineOfEntry(text: string, id: string, nth = 1): number | undefined {
  let found = 0
  const lines = text.split('\n')
  for (let index = 0; index < lines.length; index++) {
    if (isIdLine(lines[index]!, id) && ++found === nth) return index + 1
  }
  return undefined
}

/**
 * Whether `line` is `id: <id>` (optionally a list item's `- id:`, the id optionally quoted, a comment after it). Matched by
 * hand, not by a RegExp built from the id: an id is the file's text, and a long one (≈ 50,000 characters) made V8 refuse the
 * expression, which reported the save as unreadable instead of naming its problem.
 */
function isIdLine(line: string, id: string): boolean {
  let at = skipSpaces(line, 0)
  if (line[at] === '-' && at + 1 < line.length && /\s/.test(line[at + 1]!)) at = skipSpaces(line, at + 1)
  if (!line.startsWith('id:', at)) return false
  at = skipSpaces(line, at + 3)
  const quote = line[at] === '"' || line[at] === "'" ? line[at]! : ''
  at += quote.length
  if (!line.startsWith(id, at)) return false
  at += id.length
  if (quote) {
    if (line[at] !== quote) return false
    at++
  }
  at = skipSpaces(line, at)
  return at === line.length || line[at] === '#'
}

function skipSpaces(line: string, at: number): number {
  while (at < line.length && /\s/.test(line[at]!)) at++
  return at
}

/** An error as one bounded line with no control characters (it may quote the file). */
export function oneLine(error: unknown): string {
  const text = stripControl(describeError(error)).split('\n')[0]!.trim()
  return headChars(text, 300, '…')
}

function describeShape(value: unknown): string {
  if (value === null || value === undefined) return 'empty'
  if (Array.isArray(value)) return 'a list'
  return typeof value === 'object' ? 'a mapping' : `a ${typeof value}`
}
