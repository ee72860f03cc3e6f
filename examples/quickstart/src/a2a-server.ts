#!/usr/bin/env node
/**
 * The quick start's agent served over A2A: `node lib/a2a-server.js [--root dir] [--exit-with-stdin]`
 * runs the app of `a2a-server.yml` (next to `lib/`) with @cordisjs/loader. Its
 * @cordis-subagents/serve-a2a entry listens on 127.0.0.1 (a free port) with a bearer token generated
 * for this start. Once it listens, this prints one line `{"url":…,"token":…}` on stdout, the pipe
 * only its parent (the a2a-host plugin) reads; logs go to stderr. With --exit-with-stdin it exits
 * when its stdin ends (the host's process died).
 */
import { statSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import type {} from '@cordis-subagents/serve-a2a'

// stdout carries only the one "listening" line: cordis' logger (console.log) goes to stderr.
console.log = console.error
console.info = console.error

const { values: args } = parseArgs({
  options: {
    root: { type: 'string' },
    config: { type: 'string' },
    'exit-with-stdin': { type: 'boolean', default: false },
  },
})
const root = resolve(args.root ?? process.cwd())
if (!statSync(root, { throwIfNoEntry: false })?.isDirectory()) {
  process.stderr.write(`a2a-server: --root ${root} is not a directory; give the workspace the agent may read\n`)
  process.exit(2)
}
// Before the loader is imported: @cordisjs/loader snapshots process.env when it is imported and
// restores that snapshot when it starts, so a variable set after the import never reaches the
// config's `!!js` (the server then served the working directory to every token holder).
process.env.QUICKSTART_A2A_ROOT = root
const config = args.config ?? fileURLToPath(new URL('../a2a-server.yml', import.meta.url))
const { startApp } = await import('./app.js')
const { startGlobalTracing } = await import('./tracing.js')

// With an OTLP endpoint (or QUICKSTART_TRACE_FILE), a task continues the trace of the delegating call.
const tracing = await startGlobalTracing('cordis-subagents-a2a-server')
const app = await startApp(config, { timeout: 20_000 })
const server = app.ctx.get('a2aServer')
if (!server?.url) {
  process.stderr.write('a2a-server: the serve-a2a entry did not start (see the log above)\n')
  await app.stop()
  process.exit(2)
}
process.stdout.write(`${JSON.stringify({ url: server.url, token: server.token })}\n`)

let stopping = false
async function shutdown() {
  if (stopping) return
  stopping = true
  // The host allows killGrace (3 s) between SIGTERM and SIGKILL: the finished runs' spans go out first, so a slow
  // stop on a loaded machine cannot lose them.
  await tracing?.flush()
  await app.stop()
  await tracing?.shutdown()
  process.exit(0)
}
process.on('SIGTERM', () => void shutdown())
process.on('SIGINT', () => void shutdown())
// Started by a host that may die without a word (SIGKILL): its end of our stdin closing is the sign.
if (args['exit-with-stdin']) {
  process.stdin.on('end', () => void shutdown()).on('error', () => void shutdown()).resume()
}
