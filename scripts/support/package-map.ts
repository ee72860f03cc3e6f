// The README's package map, built from the package.json files: one row per package (name linked to
// its folder, description, the packages of ours it depends on), bottom layer first.
import { internalDependencies, type Manifest, SCOPE } from './workspace-packages.js'

export const START = '<!-- package-map:start (written by npm run docs:map from each package.json) -->'
export const END = '<!-- package-map:end -->'
/** One line in a table row: longer belongs in the package's README. */
export const MAX_DESCRIPTION = 200

/** Manifests ordered bottom-up: each after the packages it depends on, ties by folder. */
export function layered(manifests: readonly Manifest[]): Manifest[] {
  const byName = new Map(manifests.map((manifest) => [manifest.name, manifest]))
  const placed = new Set<string>()
  const ordered: Manifest[] = []
  const place = (manifest: Manifest, path: readonly string[]) => {
    if (placed.has(manifest.name)) return
    if (path.includes(manifest.name)) throw new Error(`package-map: a dependency cycle: ${[...path, manifest.name].join(' → ')}`)
    for (const dependency of internalDependencies(manifest)) {
      const target = byName.get(SCOPE + dependency)
      if (target) place(target, [...path, manifest.name])
    }
    placed.add(manifest.name)
    ordered.push(manifest)
  }
  for (const manifest of manifests) place(manifest, [])
  return ordered
}

/** What is wrong with the manifests' descriptions, one line each. */
export function descriptionProblems(manifests: readonly Manifest[]): string[] {
  return manifests.flatMap((manifest) => {
    const text = manifest.description?.trim() ?? ''
    if (!text) return [`${manifest.dir}/package.json: no "description"`]
    if (/[\n|]/.test(text)) return [`${manifest.dir}/package.json: "description" must be one line without "|"`]
    if (text.length > MAX_DESCRIPTION) return [`${manifest.dir}/package.json: "description" is ${text.length} characters (at most ${MAX_DESCRIPTION})`]
    return []
  })
}

export function packageTable(manifests: readonly Manifest[]): string {
  const rows = layered(manifests).map((manifest) => {
    const dependencies = internalDependencies(manifest).map((name) => `\`${name}\``).join(', ') || '—'
    return `| [\`${manifest.name}\`](${manifest.dir}) | ${manifest.description?.trim()} | ${dependencies} |`
  })
  return ['| package | what it is | depends on (ours) |', '|---|---|---|', ...rows].join('\n')
}

/** The README with the generated table between the markers (which must each appear once). */
export function withPackageMap(readme: string, table: string): string {
  const start = readme.indexOf(START)
  const end = readme.indexOf(END)
  if (start < 0 || end < start || readme.indexOf(START, start + 1) >= 0 || readme.indexOf(END, end + 1) >= 0) {
    throw new Error(`package-map: README.md needs exactly one "${START}" followed by one "${END}".`)
  }
  return `${readme.slice(0, start + START.length)}\n${table}\n${readme.slice(end)}`
}
