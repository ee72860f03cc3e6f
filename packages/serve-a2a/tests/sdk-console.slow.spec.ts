/// <reference types="mocha" />
// The lines a client can make the host write once per request or per task update. The A2A SDK's JSON-RPC handler wrote one
// raw console.error per request with an A2A-Version it does not support, and per SubscribeToTask of an unknown task (with
// the client's JSON-RPC id whole: a 900 KiB id made a 900 KiB line, escapes kept), limited only by rateLimit; a task
// whose webhook refuses made three PUSH_* warnings. Both now go to the plugin's logger under a log budget: 10 lines a
// minute per key, the rest counted and summarised in one line (at the latest at the server's stop).
import { randomUUID } from 'node:crypto'
import { Agent, request } from 'node:http'
import { expect } from 'chai'
import { Logger } from 'cordis'
import { bearer, rpc, serve, type Served } from './helpers.js'
import { eventually } from '@cordis-subagents/test-support'

const METHODS = ['error', 'warn', 'info', 'debug'] as const

interface Captured {
  /** The plugin's log lines (debug included), as `<type> <content>`. */
  lines: string[]
  /** What reached the host's console.error / warn / info / debug (cut to 200 characters). */
  printed: string[]
  /** Whether every console method is the host's again (no route left in place). */
  restored(): boolean
}

/** Runs `body` with the loggers and the host's console recorded, both set before the server starts (as a host's are). */
async function captured(body: (seen: Captured) => Promise<void>): Promise<Captured> {
  const stubs = Object.fromEntries(METHODS.map((method) => [method, (...args: unknown[]) => {
    seen.printed.push(args.map(String).join(' ').slice(0, 200))
  }]))
  const seen: Captured = { lines: [], printed: [], restored: () => METHODS.every((method) => console[method] === stubs[method]) }
  const targets = Logger.targets.splice(0, Logger.targets.length, {
    levels: { base: 3 },
    record: (record) => { seen.lines.push(`${record.type} ${record.content}`) },
  })
  const saved = Object.fromEntries(METHODS.map((method) => [method, console[method]]))
  Object.assign(console, stubs)
  try {
    await body(seen)
  } finally {
    Object.assign(console, saved)
    Logger.targets.splice(0, Logger.targets.length, ...targets)
  }
  return seen
}

/** `count` JSON-RPC POSTs, 32 at a time over kept-alive connections; their statuses. */
async function flood(served: Served, count: number, make: (i: number) => { headers: Record<string, string>; body: string }) {
  const url = new URL(served.server.url)
  const agent = new Agent({ keepAlive: true, maxSockets: 32 })
  const statuses: number[] = []
  const post = ({ headers, body }: { headers: Record<string, string>; body: string }) => new Promise<number>((resolve, reject) => {
    const req = request({
      host: url.hostname, port: url.port, path: '/a2a/jsonrpc', method: 'POST', agent,
      headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), ...bearer(served.server.token), ...headers },
    }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode!))
    })
    req.on('error', reject)
    req.end(body)
  })
  try {
    for (let i = 0; i < count; i += 32) {
      statuses.push(...await Promise.all(Array.from({ length: Math.min(32, count - i) }, (_, j) => post(make(i + j)))))
    }
  } finally {
    agent.destroy()
  }
  return statuses
}

/** Stops the app and waits for the server's own stop (cordis does not await it): the console is the host's again. */
async function stop(served: Served, seen: Captured) {
  await served.ctx.stop()
  await eventually(() => seen.restored(), 'the console as it was, once the server stopped')
}

const call = (method: string, params: unknown, id: unknown = 1) => JSON.stringify({ jsonrpc: '2.0', id, method, params })
const sdkLines = (seen: Captured) => seen.lines.filter((line) => line.startsWith('warn A2A SDK: '))
/** The cut of a budgeted line: 2,000 characters of the SDK's text, `…`, and the prefix. */
const MAX_LINE = 'warn A2A SDK: '.length + 2_001

describe('serve-a2a: the A2A SDK\'s console and push failures, under a log budget', function () {
  this.timeout(60_000)

  it('2,000 requests with an unsupported A2A-Version: no raw console call, 10 lines and one summary at the stop', async () => {
    const N = 2_000
    let routed = false
    const seen = await captured(async (seen) => {
      const served = await serve({ rateLimit: 100_000 })
      routed = !seen.restored()
      try {
        const statuses = await flood(served, N, (i) => ({ headers: { 'A2A-Version': `9.${i}` }, body: call('GetTask', { id: 'x' }) }))
        expect(statuses.filter((status) => status === 200)).to.have.length(N)
        // The host's own console calls still reach the console while the server listens.
        console.error('the host itself')
      } finally {
        await stop(served, seen)
      }
    })
    // Before the fix: 2,000 raw console.error calls ("Unhandled error in JSON-RPC POST handler: VersionNotSupportedError …").
    expect(seen.printed.length, 'raw console calls').to.equal(1)
    expect(seen.printed).to.deep.equal(['the host itself'])
    expect(routed, 'the SDK\'s console routed while the server listens').to.equal(true)
    const lines = sdkLines(seen)
    expect(lines).to.have.length(11)
    for (const line of lines.slice(0, 10)) {
      expect(line).to.match(/^warn A2A SDK: Unhandled error in JSON-RPC POST handler: VersionNotSupportedError: .*'9\.\d+' is not supported/)
    }
    expect(lines[10]).to.equal(`warn A2A SDK: ${N - 10} more lines like this were not logged (log budget: 10 per 60 s)`)
  })

  it('SubscribeToTask of unknown tasks with a 900 KiB JSON-RPC id holding escapes: lines cut to 2,000 characters, on one line', async () => {
    const id = `\u001b[31m\u001b]52;c;${'I'.repeat(900 * 1024)}\n` + 'forged line'
    const seen = await captured(async (seen) => {
      const served = await serve()
      try {
        const statuses = await flood(served, 20, (i) => ({ headers: { 'A2A-Version': '1.0' }, body: call('SubscribeToTask', { id: `nope-${i}` }, id) }))
        expect(statuses).to.deep.equal(Array.from({ length: 20 }, () => 200))
      } finally {
        await stop(served, seen)
      }
    })
    // Before the fix: 20 raw console.error calls of 921,679 bytes each, the escapes kept.
    expect(seen.printed, 'raw console calls').to.deep.equal([])
    const lines = sdkLines(seen)
    expect(lines).to.have.length(11)
    for (const line of lines.slice(0, 10)) {
      expect(line).to.match(/^warn A2A SDK: Pre-stream error for request /)
      expect(line.length).to.be.at.most(MAX_LINE)
      expect(line).to.not.match(/[\u0000-\u001f\u007f]/)
    }
    expect(lines[10]).to.equal('warn A2A SDK: 10 more lines like this were not logged (log budget: 10 per 60 s)')
  })

  it('push: 60 tasks whose webhook is refused make 10 warnings and one summary naming the credential\'s scope, and count all', async () => {
    const N = 60
    let served: Served | undefined
    let refused = 0
    const seen = await captured(async (seen) => {
      served = await serve({ rateLimit: 100_000, push: { enabled: true, allowHttp: true, retries: 0 } as never })
      try {
        for (let i = 0; i < N; i += 10) {
          await Promise.all(Array.from({ length: 10 }, () => rpc(served!.server.url, {
            jsonrpc: '2.0', id: 1, method: 'SendMessage',
            params: {
              message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hello' }] },
              configuration: { taskPushNotificationConfig: { url: 'http://169.254.1.1/hook', token: 't' } },
            },
          }, { 'A2A-Version': '1.0', ...bearer(served!.server.token) })))
        }
        await served.server.pushIdle()
        refused = served.server.pushNotifications.PUSH_TARGET_REFUSED ?? 0
      } finally {
        await stop(served, seen)
      }
    })
    // Every refused delivery is still counted (each task's updates: a few per task).
    expect(refused).to.be.at.least(2 * N)
    const warnings = seen.lines.filter((line) => /^warn (PUSH_|push notifications)/.test(line))
    // Before the fix: one warning per refused delivery (3 per task).
    expect(warnings).to.have.length(11)
    for (const line of warnings.slice(0, 10)) expect(line).to.match(/^warn PUSH_TARGET_REFUSED: push notification for task [\w-]+ to http:\/\/169\.254\.1\.1\/hook: /)
    expect(warnings[10]).to.match(new RegExp(`^warn push notifications \\(cred-[0-9a-f]{32}\\): ${refused - 10} more lines like this were not logged \\(log budget: 10 per 60 s\\)$`))
    expect(warnings.join('\n')).to.not.include(served!.server.token!)
  })
})
