#!/usr/bin/env node
/**
 * cordis-subagents-mcp [cordis.yml]: starts a cordis app from a cordis.yml (through
 * @cordisjs/loader) whose `@cordis-subagents/mcp/serve` entry has `transport: stdio`, and serves
 * MCP on stdin/stdout. Logs go to stderr (stdout carries only MCP messages). The app stops when
 * the client closes stdin, or on SIGINT/SIGTERM.
 */
import { resolve } from 'node:path'
import { Context, Logger } from 'cordis'

/** How long stopping the app may take before the process exits anyway (ms). */
const STOP_TIMEOUT = 10_000

for (const target of Logger.targets) target.print = (text: string) => process.stderr.write(`${text}\n`)
Logger.levels.base = process.env.CORDIS_SUBAGENTS_MCP_VERBOSE ? 3 : 2

const filename = resolve(process.argv[2] ?? 'cordis.yml')
const { default: Loader } = await import('@cordisjs/loader')
const ctx = new Context()
ctx.plugin(Loader, { filename } as never)
await ctx.start()

let stopping = false
async function stop(code: number) {
  if (stopping) return
  stopping = true
  const timer = setTimeout(() => process.exit(code), STOP_TIMEOUT)
  timer.unref()
  try {
    await ctx.stop()
  } catch (error) {
    process.stderr.write(`cordis-subagents-mcp: stopping failed: ${String(error)}\n`)
  }
  process.exit(code)
}

process.stdin.once('end', () => void stop(0))
process.stdin.once('close', () => void stop(0))
process.once('SIGINT', () => void stop(130))
process.once('SIGTERM', () => void stop(143))
