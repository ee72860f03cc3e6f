#!/usr/bin/env node
/**
 * cordis-subagents-mcp [cordis.yml]: starts a cordis app from a cordis.yml (through
 * @cordisjs/loader) whose `@cordis-subagents/serve-mcp` entry has `transport: stdio`, and serves
 * MCP on stdin/stdout. stdout carries only MCP messages: everything else written to it (cordis'
 * logger, console.log) goes to stderr. The app stops when the client closes stdin or stdout, or on
 * SIGINT/SIGTERM/SIGHUP; a config that does not serve fails with one line on stderr (see --help).
 */
import { Writable } from 'node:stream'
import { reserveStdout } from './stdio.js'

// A parent that closed its end of stderr must not crash the server at the next log line: those lines are lost, MCP goes on.
process.stderr.on('error', () => {})
// Before anything else can write: MCP gets the real stdout, every other write goes to stderr.
const writeStdout = process.stdout.write.bind(process.stdout) as (chunk: unknown, callback: (error?: Error | null) => void) => boolean
reserveStdout(new Writable({ write: (chunk, _encoding, callback) => { writeStdout(chunk, callback) } }))
process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write

const { runBin } = await import('./run-bin.js')
process.exitCode = await runBin(process.argv.slice(2))
// runBin resolves once the app has stopped (or did not serve): nothing of ours is left to wait for.
process.exit()
