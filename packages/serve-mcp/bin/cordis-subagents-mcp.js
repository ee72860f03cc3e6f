#!/usr/bin/env node
// npm links this committed file as the `cordis-subagents-mcp` bin: `npm ci` skips a bin whose target does not
// exist, and lib/ exists only after `npm run build`. It runs the built program.
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const program = new URL('../lib/bin.js', import.meta.url)
if (!existsSync(program)) {
  process.stderr.write(`cordis-subagents-mcp: ${fileURLToPath(program)} is not built: run \`npm run build\` at the repository root\n`)
  process.exit(1)
}
await import(program.href)
