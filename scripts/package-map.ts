// `npm run docs:map`: writes the README's package map from each package.json, between the
// package-map markers. `--check` (run by `npm run lint`) writes nothing and exits 1 when the README
// is stale or a description is missing, more than one line, or too long.
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { descriptionProblems, packageTable, withPackageMap } from './support/package-map.js'
import { ROOT, workspaceManifests } from './support/workspace-packages.js'

function main(argv: readonly string[]) {
  const file = join(ROOT, 'README.md')
  const manifests = workspaceManifests()
  const problems = descriptionProblems(manifests)
  if (problems.length) {
    console.error(`package-map: fix these package.json descriptions:\n  ${problems.join('\n  ')}`)
    return 1
  }
  const readme = readFileSync(file, 'utf8')
  const next = withPackageMap(readme, packageTable(manifests))
  if (argv.includes('--check')) {
    if (next === readme) return 0
    console.error('package-map: README.md\'s package map is stale; run `npm run docs:map` and commit README.md.')
    return 1
  }
  if (next !== readme) writeFileSync(file, next)
  return 0
}

process.exitCode = main(process.argv.slice(2))
