// `npm run docs:map`: writes the README's package map from each package.json, between the
// package-map markers, and the shared package's module table from its src/index.ts (between the
// shared-modules markers of packages/shared/README.md). `--check` (run by `npm run lint`) writes
// nothing and exits 1 when either is stale, or a description or caption is missing or too long.
import { readFileSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { descriptionProblems, packageTable, withPackageMap } from './support/package-map.js'
import { captionProblems, SHARED_DIR, sharedModules, sharedModuleTable, withSharedModules } from './support/shared-modules.js'
import { ROOT, workspaceManifests } from './support/workspace-packages.js'

/** One generated table: the file it lives in, what is wrong with its sources, and the file as it should read. */
interface Generated {
  file: string
  problems: string[]
  next: (text: string) => string
}

function main(argv: readonly string[]) {
  const manifests = workspaceManifests()
  const modules = sharedModules()
  const tables: Generated[] = [
    { file: join(ROOT, 'README.md'), problems: descriptionProblems(manifests), next: (text) => withPackageMap(text, packageTable(manifests)) },
    { file: join(SHARED_DIR, 'README.md'), problems: captionProblems(modules), next: (text) => withSharedModules(text, sharedModuleTable(modules)) },
  ]
  const problems = tables.flatMap((table) => table.problems)
  if (problems.length) {
    console.error(`package-map: fix these package.json descriptions and module comments:\n  ${problems.join('\n  ')}`)
    return 1
  }
  let stale = 0
  for (const { file, next } of tables) {
    const text = readFileSync(file, 'utf8')
    const updated = next(text)
    if (updated === text) continue
    if (argv.includes('--check')) {
      console.error(`package-map: ${relative(ROOT, file)}'s generated table is stale; run \`npm run docs:map\` and commit it.`)
      stale++
    } else writeFileSync(file, updated)
  }
  return stale ? 1 : 0
}

process.exitCode = main(process.argv.slice(2))
