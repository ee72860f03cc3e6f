// Builds the console page (client/) into dist/ with Koishi's own client tooling (@koishijs/client's
// build: Vite, Vue, everything from the lockfile, offline), as `koishi-console build` does, and
// stamps dist/ with a digest of what it was built from (client sources and the tooling's version):
// run again when dist/ is missing or stale (tests/koishi-project.ts checks the stamp). It reports on
// stderr: npm pack --json (prepack) keeps stdout for its JSON.
import { createRequire } from 'node:module'
import { writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { sourceDigest } from './client-digest.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(import.meta.url)
const { build } = require('@koishijs/client/lib')
const started = Date.now()
await build(root, { logLevel: 'warn' })
writeFileSync(join(root, 'dist', 'source.sha256'), `${sourceDigest(root)}\n`)
console.error(`koishi-console: built dist/ in ${Date.now() - started} ms`)
