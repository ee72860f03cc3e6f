// Every entry point the packages' package.json "exports" name, and the names each one exports: the
// values an import sees at run time and the type-only names the TypeScript checker sees. What
// test/package-surface.spec.ts compares with the pinned list.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import ts from 'typescript'
import { type Manifest, ROOT, workspaceManifests } from './workspace-packages.js'

export const PIN_FILE = join(ROOT, 'test', 'fixtures', 'package-exports.json')
/** What the pin file holds for an entry point that is a program (a bin): it is never imported. */
export const PROGRAM = 'program (a bin: not imported)'

export interface EntryPoint {
  /** What a user imports: `@cordis-subagents/mcp/servers`. */
  specifier: string
  /** The source file (the `cordis-subagents-source` condition's target), absolute. */
  source: string
  program: boolean
}

/**
 * The entry points of `packages/*` (not `./package.json`), in folder and then subpath order. A program
 * is an entry whose source starts with a shebang (`#!`): what a bin runs (the bin itself is a committed
 * file under bin/ that imports it, so npm links it before lib/ is built).
 */
export function entryPoints(manifests: readonly Manifest[] = workspaceManifests(['packages'])): EntryPoint[] {
  // A private package (test-support) is never published: it has no public surface.
  return manifests.filter((manifest) => !manifest.private).flatMap((manifest) => Object.entries(manifest.exports ?? {})
    .filter(([subpath]) => subpath !== './package.json')
    .map(([subpath, target]) => {
      const source = join(ROOT, manifest.dir, (target as { 'cordis-subagents-source'?: string })['cordis-subagents-source'] ?? '')
      return { specifier: manifest.name + subpath.slice(1), source, program: readFileSync(source, 'utf8').startsWith('#!') }
    }))
}

interface EntrySurface {
  /** What `Object.keys(await import(specifier))` lists. */
  values: string[]
  /** Names only TypeScript sees (interfaces, type aliases, `export type`). */
  types: string[]
}

export type Surface = Record<string, EntrySurface | typeof PROGRAM>

/** The names each entry's source exports as TypeScript sees them (and which are `@internal`), from one program over all entries. */
function typeCheckedNames(points: readonly EntryPoint[]): Map<string, { names: string[], internal: string[] }> {
  const config = ts.getParsedCommandLineOfConfigFile(join(ROOT, 'tsconfig.test.json'), {}, {
    ...ts.sys, onUnRecoverableConfigFileDiagnostic: (diagnostic) => { throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')) },
  })!
  const program = ts.createProgram(points.map((point) => point.source), { ...config.options, noEmit: true })
  const checker = program.getTypeChecker()
  return new Map(points.map((point) => {
    const file = program.getSourceFile(point.source)
    const symbol = file && checker.getSymbolAtLocation(file)
    if (!symbol) throw new Error(`package-surface: ${point.specifier}: cannot read ${point.source}`)
    const exported = checker.getExportsOfModule(symbol)
    return [point.specifier, {
      names: exported.map((entry) => entry.name),
      internal: exported.filter((entry) => isInternal(entry, checker)).map((entry) => entry.name),
    }]
  }))
}

/**
 * Whether a name is marked `@internal` (a test hook): on its export statement or on its declaration.
 * `stripInternal` keeps it out of the published .d.ts, and the pin leaves it out too.
 */
function isInternal(symbol: ts.Symbol, checker: ts.TypeChecker): boolean {
  const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol
  const declarations = [...symbol.declarations ?? [], ...target.declarations ?? []]
  return declarations.some((declaration) => {
    const statement = ts.isExportSpecifier(declaration) ? declaration.parent.parent : declaration
    return [declaration, statement].some((node) => ts.getJSDocTags(node).some((tag) => tag.tagName.text === 'internal'))
  })
}

/** Imports each entry point (the `cordis-subagents-source` condition makes that its src/) and lists its names, sorted. */
export async function currentSurface(points: readonly EntryPoint[] = entryPoints()): Promise<Surface> {
  const modules = points.filter((point) => !point.program)
  const typeChecked = typeCheckedNames(modules)
  const surface: Surface = {}
  for (const point of points) {
    if (point.program) {
      surface[point.specifier] = PROGRAM
      continue
    }
    const { names, internal } = typeChecked.get(point.specifier)!
    const values = Object.keys(await import(point.specifier)).filter((name) => !internal.includes(name)).sort()
    const types = names.filter((name) => !values.includes(name) && !internal.includes(name)).sort()
    surface[point.specifier] = { values, types }
  }
  return surface
}

/**
 * The names of a plugin's shape (DESIGN §3): every plugin entry exports them, so they are not one
 * concept exported twice. `default` is a service plugin's class, once more under its own name.
 */
const PLUGIN_SHAPE = new Set(['name', 'inject', 'reusable', 'Config', 'apply', 'default'])

/**
 * One line per public name that more than one entry point exports (plugin shape aside): a name has
 * one home, and whoever needs it imports it from there.
 */
export function namesExportedTwice(surface: Surface): string[] {
  const homes = new Map<string, string[]>()
  for (const [specifier, entry] of Object.entries(surface)) {
    if (typeof entry === 'string') continue
    for (const name of [...entry.values, ...entry.types]) {
      if (!PLUGIN_SHAPE.has(name)) homes.set(name, [...homes.get(name) ?? [], specifier])
    }
  }
  return [...homes].filter(([, specifiers]) => specifiers.length > 1).map(([name, specifiers]) => `${name}: ${specifiers.join(', ')}`)
}

/** One line per difference between the pinned surface and the current one. */
export function surfaceChanges(pinned: Surface, current: Surface): string[] {
  const changes: string[] = []
  for (const specifier of new Set([...Object.keys(pinned), ...Object.keys(current)])) {
    const before = pinned[specifier]
    const now = current[specifier]
    if (before === undefined) changes.push(`${specifier}: a new entry point`)
    else if (now === undefined) changes.push(`${specifier}: the entry point is gone`)
    else if (typeof before === 'string' || typeof now === 'string') {
      if (before !== now) changes.push(`${specifier}: ${JSON.stringify(before)} → ${JSON.stringify(now)}`)
    } else {
      for (const kind of ['values', 'types'] as const) {
        const added = now[kind].filter((name) => !before[kind].includes(name))
        const removed = before[kind].filter((name) => !now[kind].includes(name))
        if (added.length) changes.push(`${specifier}: added ${kind === 'types' ? 'type ' : ''}${added.join(', ')}`)
        if (removed.length) changes.push(`${specifier}: removed ${kind === 'types' ? 'type ' : ''}${removed.join(', ')}`)
      }
    }
  }
  return changes
}
