// The package.json files of the workspace's packages: what the package-map and export-pin scripts read.
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
export const SCOPE = '@cordis-subagents/'

export interface Manifest {
  /** The folder, relative to the root, with `/` separators (`packages/agent`). */
  dir: string
  name: string
  description?: string
  private?: boolean
  bin?: string | Record<string, string>
  exports?: Record<string, unknown>
  dependencies?: Record<string, string>
  peerDependencies?: Record<string, string>
}

/** Every `packages/*` manifest, then every `examples/*` one, each group sorted by folder name. */
export function workspaceManifests(groups: readonly string[] = ['packages', 'examples']): Manifest[] {
  return groups.flatMap((group) => readdirSync(join(ROOT, group), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => join(ROOT, group, entry.name, 'package.json'))
    .sort()
    .map((file) => ({
      ...JSON.parse(readFileSync(file, 'utf8')) as Omit<Manifest, 'dir'>,
      dir: relative(ROOT, dirname(file)).split('\\').join('/'),
    })))
}

/** The workspace packages a manifest depends on (dependencies and peers), without the scope. */
export function internalDependencies(manifest: Manifest): string[] {
  const names = Object.keys({ ...manifest.dependencies, ...manifest.peerDependencies })
  return [...new Set(names.filter((name) => name.startsWith(SCOPE)).map((name) => name.slice(SCOPE.length)))].sort()
}
