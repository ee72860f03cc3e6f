#!/usr/bin/env node
// Runs `command ...args` with piped stdio and records every newline-delimited message it receives
// ("in") and sends ("out") in `log`, one JSON line each ({ dir, text }), passing both streams on
// unchanged: the capture of an ACP agent's transport for the protocol contract specs.
// Usage: node jsonrpc-tee.mjs <log> <command> [...args]
import { spawn } from 'node:child_process'
import { appendFileSync } from 'node:fs'
import { StringDecoder } from 'node:string_decoder'

const [log, command, ...args] = process.argv.slice(2)
const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] })

function tap(dir) {
  const decoder = new StringDecoder('utf8')
  let rest = ''
  return (chunk) => {
    rest += decoder.write(chunk)
    for (let end = rest.indexOf('\n'); end >= 0; end = rest.indexOf('\n')) {
      const text = rest.slice(0, end)
      rest = rest.slice(end + 1)
      if (text.trim()) appendFileSync(log, `${JSON.stringify({ dir, text })}\n`)
    }
  }
}

child.stdin.on('error', () => {})
process.stdout.on('error', () => {})
process.stdin.on('data', tap('in'))
process.stdin.pipe(child.stdin)
child.stdout.on('data', tap('out'))
child.stdout.pipe(process.stdout)
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => child.kill(signal))
child.on('error', (error) => {
  process.stderr.write(`jsonrpc-tee: ${error.message}\n`)
  process.exit(127)
})
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)))
