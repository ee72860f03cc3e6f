// `npm run lint:packages`: every package installs alone. It builds (`tsc -b`) and packs (`npm pack`)
// every published package, runs publint and are-the-types-wrong on each tarball, installs each into an
// empty project of its own from the tarballs alone (its own and those of the packages of ours it needs;
// third-party packages from the registry or, offline, the npm cache), imports every entry point and
// runs every bin with npx. Arguments: package folder names to check only those (`-- mcp serve-acp`);
// --keep keeps the temporary projects (they are kept anyway when something fails).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { lintTarball } from './support/pack-lint.js'
import { checkInstalled } from './support/pack-project.js'
import { buildAndPack, type Packed } from './support/pack-tarballs.js'

/** Packages checked at once: the installs mostly wait on the disk and the cache. */
const JOBS = 3

const args = process.argv.slice(2)
const keep = args.includes('--keep')
const only = args.filter((arg) => !arg.startsWith('--'))
const started = Date.now()
const seconds = (since: number) => `${((Date.now() - since) / 1000).toFixed(1)} s`

const work = mkdtempSync(join(tmpdir(), 'cordis-subagents-packs-'))
const packed = await buildAndPack(join(work, 'tarballs'))
const unknown = only.filter((name) => !packed.some((entry) => entry.manifest.dir === `packages/${name}`))
if (unknown.length) throw new Error(`lint:packages: no published package in packages/${unknown.join(', packages/')}`)
const selected = only.length ? packed.filter((entry) => only.includes(entry.manifest.dir.slice('packages/'.length))) : packed
console.log(`lint:packages: built and packed ${packed.length} packages in ${seconds(started)}; checking ${selected.length} in ${work}`)

async function check(entry: Packed): Promise<string[]> {
  const since = Date.now()
  const folder = join(work, entry.manifest.dir)
  const problems = [...await lintTarball(entry.tarball, entry.files), ...await checkInstalled(entry, packed, folder, `${folder}-session`)]
  const status = problems.length ? `FAILED (${problems.length})` : 'ok'
  console.log(`  ${entry.manifest.name}: ${status}, ${seconds(since)}${problems.map((problem) => `\n  - ${problem}`).join('')}`)
  // A project that passed goes now, while the others install: a few hundred MB of node_modules in all.
  if (!problems.length && !keep) for (const dir of [folder, `${folder}-session`]) rmSync(dir, { recursive: true, force: true })
  return problems
}

const queue = [...selected]
let failures = 0
await Promise.all(Array.from({ length: JOBS }, async () => {
  for (let entry = queue.shift(); entry; entry = queue.shift()) {
    const problems = await check(entry)
    if (problems.length) failures++
  }
}))

console.log(`lint:packages: ${selected.length - failures} of ${selected.length} packages install alone, import and run their bins (${seconds(started)})`)
if (failures || keep) console.log(`lint:packages: the projects are kept in ${work}`)
else rmSync(work, { recursive: true, force: true })
process.exitCode = failures ? 1 : 0
