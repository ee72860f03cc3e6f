// Every option a plugin's `Config` schema takes has a row in its package README's config table (a table with a
// "default" column), and that row's default is the schema's. Top-level options only: nested ones (a `budget` object's
// limits, a `rateLimit` block) are described in their own sections. The README a user reads for an entry point is its
// package's README.md and README-*.md (subagent-tool's control entry: README-control.md). Catches a schema option added
// without a row and a default changed on one side only (issue 41: docs drift caught by tests for the claims that matter).
import { readdirSync, readFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { join, relative } from 'node:path'
import { expect } from 'chai'
import { ROOT } from './helpers.js'

interface SchemaNode {
  type?: string; dict?: Record<string, SchemaNode>; list?: SchemaNode[]; inner?: SchemaNode; meta?: Record<string, unknown>
}

// A bin's entry is a string there (not imported).
const pinned = JSON.parse(readFileSync(join(ROOT, 'test/fixtures/package-exports.json'), 'utf8')) as Record<string, { values: string[] } | string>

/** The top-level options of a schema: an object's keys, through intersections, unions and transforms. */
function options(schema: SchemaNode | undefined, out = new Map<string, SchemaNode>(), depth = 0): Map<string, SchemaNode> {
  if (!schema || depth > 8) return out
  if (schema.type === 'object') for (const [key, value] of Object.entries(schema.dict ?? {})) out.set(key, value)
  else if (schema.type === 'intersect' || schema.type === 'union') for (const member of schema.list ?? []) options(member, out, depth + 1)
  else if (schema.type === 'transform') options(schema.inner, out, depth + 1)
  return out
}

/** A default as a README may write it: the number itself (with thousands separators) or in a unit. */
function spellings(value: number): RegExp[] {
  const grouped = value.toLocaleString('en-US')
  // 16384, 16,384, or 16 384 (a space or a thin space between the groups).
  const found = [String(value), grouped, grouped.replace(/,/g, ' '), grouped.replace(/,/g, '\u2009')]
    .map((text) => new RegExp(`(?<![\\d.,])${text.replace(/[.,]/g, '\\$&')}(?![\\d])`))
  const units: [number, string][] = [[1000, '(?:s|secs?|seconds?)'], [60_000, '(?:min|minutes?)'], [3_600_000, '(?:h|hours?)'], [86_400_000, '(?:d|days?)'],
    [1024, '(?:KiB|KB)'], [1_048_576, '(?:MiB|MB)'], [1_073_741_824, 'GiB']]
  for (const [unit, name] of units) {
    const amount = value / unit
    if (value > 0 && Number.isInteger(amount * 100)) found.push(new RegExp(`(?<![\\d.])${String(+amount.toFixed(2)).replace('.', '\\.')}\\s?${name}\\b`))
  }
  return found
}

function defaultWritten(value: unknown, cell: string): boolean {
  if (typeof value === 'number') return spellings(value).some((re) => re.test(cell))
  if (typeof value === 'boolean') return cell.includes(String(value))
  // A default read from the machine (the checkpoints store's `host`) is written as what it is.
  if (typeof value === 'string' && value === hostname()) return /hostname/i.test(cell)
  if (typeof value === 'string') return value ? cell.includes(value) : /""|''|empty|none|—/i.test(cell)
  return true
}

/** Rows of the config tables (header with a "default" column) in `files`: option name → its default cell and where. */
function tableRows(files: string[]): Map<string, { cell: string; at: string }> {
  const rows = new Map<string, { cell: string; at: string }>()
  for (const file of files) {
    const lines = readFileSync(file, 'utf8').split('\n')
    let header: string[] | undefined
    lines.forEach((line, index) => {
      if (!line.startsWith('|')) return void (header = undefined)
      const cells = line.split(/(?<!\\)\|/).slice(1, -1).map((cell) => cell.trim())
      if (!header) return void (header = cells.map((cell) => cell.toLowerCase()))
      const column = header.findIndex((name) => name.includes('default'))
      if (column < 0 || /^[-: ]+$/.test(cells.join(''))) return
      for (const [, key] of cells[0]!.matchAll(/`([A-Za-z]\w*)((?:\.\w+)*)`/g)) {
        // `push.enabled` documents `push` by its keys: kept as `push.*`.
        const name = key! + (cells[0]!.includes(`\`${key}.`) ? '.*' : '')
        if (!rows.has(name)) rows.set(name, { cell: cells[column] ?? '', at: `${relative(ROOT, file)}:${index + 1}` })
      }
    })
  }
  return rows
}

/** Package name → its folder under packages/. */
const folders = new Map(readdirSync(join(ROOT, 'packages')).map((dir) => {
  const { name } = JSON.parse(readFileSync(join(ROOT, 'packages', dir, 'package.json'), 'utf8')) as { name: string }
  return [name, dir] as const
}))

/** The READMEs of an entry point: its package's, and subagent-tool's for the control entry (a thin re-export). */
function readmesOf(entry: string): string[] {
  const name = entry.split('/').slice(0, 2).join('/')
  const pkg = name === '@cordis-subagents/subagent-control' ? 'subagent-tool' : folders.get(name)!
  const names = readdirSync(join(ROOT, 'packages', pkg)).filter((name) => /^README(-[\w-]+)?\.md$/.test(name))
  return names.map((name) => join(ROOT, 'packages', pkg, name))
}

describe('package READMEs: every config option has a row with the schema\'s default', () => {
  // A plugin's Config is a named export, or a static of its default export (a service class: `AgentRuntime.Config`).
  const ofDefault = ['@cordis-subagents/agent', '@cordis-subagents/checkpoints/postgres', '@cordis-subagents/tools']
  const entries = Object.entries(pinned)
    .filter(([entry, names]) => typeof names !== 'string' && (names.values.includes('Config') || ofDefault.includes(entry)))
    .map(([entry]) => entry)

  it('covers every entry point that exports a Config', () => {
    expect(entries.length).to.be.at.least(20)
  })

  for (const entry of entries) {
    it(entry, async () => {
      const loaded = await import(entry) as { Config?: SchemaNode; default?: { Config?: SchemaNode } }
      const schema = loaded.Config ?? loaded.default?.Config
      expect(schema, `${entry} exports no Config`).to.have.property('type')
      const rows = tableRows(readmesOf(entry))
      const problems: string[] = []
      for (const [key, node] of options(schema)) {
        if (node.meta?.hidden) continue
        // An object option may be documented by its keys' rows (`push.enabled`, `shared.url`, …).
        const row = rows.get(key) ?? (rows.has(`${key}.*`) ? { cell: '', at: '' } : undefined)
        if (!row) problems.push(`"${key}" has no row in a config table`)
        else if (!defaultWritten(node.meta?.default, row.cell)) problems.push(`"${key}": default ${JSON.stringify(node.meta?.default)} but ${row.at} says "${row.cell}"`)
      }
      expect(problems, problems.join('\n')).to.deep.equal([])
    })
  }
})
