// The fast tier's promise, enforced: a spec in `npm run test:fast` starts no subprocess, opens no
// server and connects to nothing (no database, no browser, no peer). Loaded only by `test:fast`;
// a spec that breaks the promise fails with the reason and belongs in the slow tier.
import childProcess, { ChildProcess } from 'node:child_process'
import { syncBuiltinESMExports } from 'node:module'
import net from 'node:net'

// The leak audit lists children with `ps`; tsx compiles through esbuild's service process.
const allowed = (command: string) => command === 'ps' || /esbuild/.test(command)
// Under --parallel mocha's main process (which loads this file too) forks its workers; each worker loads it again.
const isMochaWorker = (args: unknown) => Array.isArray(args) && args.some((arg) => /[\\/]mocha[\\/]lib[\\/]nodejs[\\/]worker\.cjs$/.test(String(arg)))

function refuse(what: string): never {
  throw new Error(`fast tier: this spec ${what}; move it to a slow tier (see CONTRIBUTING.md, "Test tiers")`)
}

// Every asynchronous spawn, exec and fork goes through ChildProcess#spawn (internal, so not in the types).
type Spawning = { spawn(this: ChildProcess, options: { file?: string, args?: unknown }): unknown }
const prototype = ChildProcess.prototype as unknown as Spawning
const spawnChild = prototype.spawn
prototype.spawn = function (this: ChildProcess, options: { file?: string, args?: unknown }) {
  if (!allowed(String(options?.file ?? '')) && !isMochaWorker(options?.args)) refuse(`starts a subprocess (${options?.file})`)
  return spawnChild.call(this, options)
}
for (const name of ['spawnSync', 'execSync', 'execFileSync'] as const) {
  const original = childProcess[name] as (...args: unknown[]) => unknown
  ;(childProcess as unknown as Record<string, unknown>)[name] = function (command: string, ...rest: unknown[]) {
    const file = name === 'execSync' ? command.trim().split(/\s+/)[0] : command
    if (!allowed(file)) refuse(`runs a subprocess (${file})`)
    return original.call(this, command, ...rest)
  }
}
net.Server.prototype.listen = function () {
  refuse('opens a network server')
}
net.Socket.prototype.connect = function () {
  refuse('opens a network connection')
}
syncBuiltinESMExports()
