// `npm run exports:pin`: writes test/fixtures/package-exports.json, the names (values and type-only
// names) every entry point of every package exports (test/package-surface.spec.ts fails when they change). Run it after an
// intended change of a package's public surface, document the change in that package's README,
// and commit the file. Run with `--conditions=cordis-subagents-source` so it reads src/.
import { writeFileSync } from 'node:fs'
import { relative } from 'node:path'
import { currentSurface, PIN_FILE } from './support/package-surface.js'
import { ROOT } from './support/workspace-packages.js'

const surface = await currentSurface()
writeFileSync(PIN_FILE, `${JSON.stringify(surface, null, 2)}\n`)
const names = Object.values(surface).reduce((sum, entry) => sum + (typeof entry === 'string' ? 0 : entry.values.length + entry.types.length), 0)
console.log(`exports:pin: ${Object.keys(surface).length} entry points, ${names} names → ${relative(ROOT, PIN_FILE)}`)
