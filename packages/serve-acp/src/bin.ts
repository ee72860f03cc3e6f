#!/usr/bin/env node
/**
 * `cordis-subagents-acp <config.yml>`: starts a cordis app from that file with @cordisjs/loader and
 * serves it over ACP on stdin/stdout (the file must load `@cordis-subagents/serve-acp`). stdout
 * carries only ACP messages: everything else written to it (cordis' logger, console.log) goes to
 * stderr. Exits when the client closes stdin or stdout, or on SIGTERM/SIGINT/SIGHUP, after stopping the app
 * (ctx.stop(), which reaps the served agents' own children).
 */
import { Writable } from 'node:stream'
import { reserveStdout } from './stdio.js'

// Before anything else can write: ACP gets the real stdout, every other write goes to stderr.
const writeStdout = process.stdout.write.bind(process.stdout) as (chunk: unknown, callback: (error?: Error | null) => void) => boolean
reserveStdout(new Writable({ write: (chunk, _encoding, callback) => { writeStdout(chunk, callback) } }))
process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write
// Logs are best-effort: a parent that closed its end of stderr must not turn the next log line into a crash.
process.stderr.on('error', () => {})

const { runBin } = await import('./run-bin.js')
process.exitCode = await runBin(process.argv.slice(2))
// runBin resolves once the app has stopped (or failed to start); nothing of ours is left to wait for.
process.exit()
