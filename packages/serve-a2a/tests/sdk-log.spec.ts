/// <reference types="mocha" />
// Which console calls serve-a2a takes over: those of the A2A SDK's server modules (every file of its 1.0 and 0.3 compat
// server builds), never those of its client (provider-a2a takes those: in one process each package gets its own SDK's
// calls), and where they go: errors and warnings as warnings, info and debug at debug level, under a log budget.
import { readdirSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { runInThisContext } from 'node:vm'
import { expect } from 'chai'
import { A2A_SDK_SERVER_PATH, ServerLogs } from '../src/logs.js'

const require = createRequire(import.meta.url)
/** `dist/` of the A2A SDK 1.x, and of the 0.3 SDK (as the tests install it). */
const SDK_DIST = dirname(dirname(require.resolve('@a2a-js/sdk/server')))
const SDK_V03_DIST = dirname(dirname(require.resolve('a2a-sdk-v03/client')))

/** Every .js / .cjs file under `dir`, as a path and as the `file:` URL an ES module's frame names. */
function modules(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => /\.c?js$/.test(file))
    .flatMap((file) => [join(dir, file), pathToFileURL(join(dir, file)).href])
}

const matches = (file: string) => A2A_SDK_SERVER_PATH.test(file)

type Say = (method: 'error' | 'warn' | 'info' | 'debug', ...args: unknown[]) => void

/** A function whose stack frame is the module `file`, calling console[method]: a stand-in for an SDK dist file. */
function sdkModule(file: string): Say {
  return runInThisContext('(function say(method, ...args) { console[method](...args) })', { filename: file }) as Say
}

describe('serve-a2a: the A2A SDK server\'s console (which calls, where they go)', () => {
  it('the pattern takes every module of the SDK\'s server builds (1.0 and 0.3 compat) and none of its clients\'', () => {
    const servers = [...modules(join(SDK_DIST, 'server')), ...modules(join(SDK_DIST, 'compat', 'v0_3', 'server'))]
    const clients = [
      ...modules(join(SDK_DIST, 'client')), ...modules(join(SDK_DIST, 'compat', 'v0_3', 'client')), ...modules(join(SDK_V03_DIST, 'client')),
    ]
    expect(servers.length).to.be.greaterThan(8)
    expect(clients.length).to.be.greaterThan(8)
    expect(servers.filter((file) => !matches(file))).to.deep.equal([])
    expect(clients.filter(matches)).to.deep.equal([])
    expect(matches('C:\\app\\node_modules\\@a2a-js\\sdk\\dist\\server\\express\\index.cjs')).to.equal(true)
  })

  describe('ServerLogs', () => {
    let saved: Record<string, unknown>
    let printed: string[]
    const lines: string[] = []
    const logger = {
      warn: (format: string, ...args: unknown[]) => void lines.push(`warn ${format.replace(/%s/g, () => String(args.shift()))}`),
      debug: (format: string, ...args: unknown[]) => void lines.push(`debug ${format.replace(/%s/g, () => String(args.shift()))}`),
    }
    const server = sdkModule(join(SDK_DIST, 'server', 'index.js'))
    const client = sdkModule(pathToFileURL(join(SDK_DIST, 'client', 'index.js')).href)

    beforeEach(() => {
      saved = { error: console.error, warn: console.warn, info: console.info, debug: console.debug }
      printed = []
      lines.length = 0
      for (const method of ['error', 'warn', 'info', 'debug'] as const) console[method] = (...args: unknown[]) => void printed.push(`${method} ${args.join(' ')}`)
    })

    afterEach(() => Object.assign(console, saved))

    it('routes the server\'s error / warn as warnings and info / debug at debug level, each on one line; the client\'s pass', () => {
      const logs = new ServerLogs(logger)
      logs.open()
      try {
        server('error', 'Pre-stream error for request %s:', '\u001b[31mred\nforged')
        server('warn', 'ResultManager: Received event for unknown task t-1')
        server('info', 'Push notification sent for task_id=t-1 to URL: http://x/hook')
        server('debug', 'a note')
        client('error', 'Failed to parse SSE event data:', 'junk')
        console.error('the host itself')
      } finally {
        logs.close()
      }
      expect(lines).to.deep.equal([
        'warn A2A SDK: Pre-stream error for request red forged:',
        'warn A2A SDK: ResultManager: Received event for unknown task t-1',
        'debug A2A SDK: Push notification sent for task_id=t-1 to URL: http://x/hook',
        'debug A2A SDK: a note',
      ])
      expect(printed).to.deep.equal(['error Failed to parse SSE event data: junk', 'error the host itself'])
    })

    it('past 10 lines a minute, counts; close() writes the summary and gives the console back', () => {
      const logs = new ServerLogs(logger)
      const before = console.error
      logs.open()
      for (let i = 0; i < 25; i++) server('error', `Unhandled error in JSON-RPC POST handler: ${i}`)
      expect(lines).to.have.length(10)
      logs.close()
      expect(console.error).to.equal(before)
      expect(lines.slice(10)).to.deep.equal(['warn A2A SDK: 15 more lines like this were not logged (log budget: 10 per 60 s)'])
      server('error', 'after the stop')
      expect(printed).to.deep.equal(['error after the stop'])
    })

    it('push failures: 10 lines a minute per credential\'s scope, one client\'s flood spends only its own', () => {
      const logs = new ServerLogs(logger)
      for (let i = 0; i < 30; i++) logs.pushFailed('cred-a', 'PUSH_TARGET_REFUSED', `push notification for task t-${i} to http://169.254.1.1/hook: refused`)
      logs.pushFailed('cred-b', 'PUSH_REJECTED', 'push notification for task u-1 to http://127.0.0.1:1/hook: answered HTTP 400')
      logs.close()
      expect(lines).to.have.length(12)
      expect(lines[10]).to.equal('warn PUSH_REJECTED: push notification for task u-1 to http://127.0.0.1:1/hook: answered HTTP 400')
      expect(lines[11]).to.equal('warn push notifications (cred-a): 20 more lines like this were not logged (log budget: 10 per 60 s)')
    })
  })
})
