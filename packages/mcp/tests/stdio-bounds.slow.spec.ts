/// <reference types="mocha" />
// The bounds of a stdio server's pipes (maxMessageBytes both ways): a server that stops reading its stdin is
// stopped once that much waits unread for it, and one that writes a longer line is stopped; both say the bound.
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { rmSync } from 'node:fs'
import { expect } from 'chai'
import { type Context, Logger } from 'cordis'
import { within } from '@cordis-subagents/test-support'
import { liveServerGroups } from '@cordis-subagents/mcp/testing'
import { alive, client, eventually, fixturePid, makeExec, setup, tempDir } from './helpers.js'

const HOSTILE = fileURLToPath(new URL('./fixtures/stdio-hostile.mjs', import.meta.url))
const BOUND = 64 * 1024
const NAMED = `maxMessageBytes (${BOUND} bytes)`
const DEFAULT_BYTES = 8 * 1024 * 1024

describe('@cordis-subagents/mcp: stdio bounds', function () {
  this.timeout(60_000)
  let ctx: Context
  let dir: string
  let pidFile: string
  let logged: string[]
  let warnings: string[]
  const target = { colors: 0, showTime: '', print: (text: string) => void logged.push(text), levels: { base: 2 } } as unknown as Logger.Target
  const onWarning = (warning: Error) => void warnings.push(`${warning.name}: ${warning.message}`)

  const hostile = (name: string, mode: string, config: Record<string, unknown> = {}) => ctx.plugin(client, {
    name, command: process.execPath, args: [HOSTILE, mode, pidFile], maxMessageBytes: BOUND, killGrace: 200, ...config,
  })
  const call = (name: string, input: unknown = {}) => ctx.tools.view().execute({ name, input }, makeExec())
  const mounted = (name: string) => eventually(`${name} mounted`, () => ctx.tools.has(name))
  const lostLine = () => logged.find((line) => line.includes('MCP_SERVER_CLOSED'))

  beforeEach(async () => {
    ({ ctx } = await setup())
    dir = tempDir('mcp-stdio-bounds-')
    pidFile = join(dir, 'server.pid')
    logged = []
    warnings = []
    Logger.targets.push(target)
    process.on('warning', onWarning)
  })

  afterEach(async () => {
    process.off('warning', onWarning)
    Logger.targets.splice(Logger.targets.indexOf(target), 1)
    await ctx.stop()
    await ctx.lifecycle.flush()
    rmSync(dir, { recursive: true, force: true })
  })

  it('a server that stops reading its stdin and floods pings is stopped once 1 024 answers wait unread', async () => {
    // The default byte bound: 1 024 answers, some 40 KiB, are what cuts this server off.
    hostile('pings', 'deaf-ping', { maxMessageBytes: DEFAULT_BYTES })
    const drainListeners = () => warnings.filter((warning) => warning.includes('MaxListenersExceeded'))
    await eventually('the server was given up', () => {
      expect(drainListeners(), 'one drain listener per queued message').to.deep.equal([])
      return !!lostLine()
    }, 15_000)
    expect(lostLine()).to.include('stopped reading its stdin').and.include(`maxMessageBytes (${DEFAULT_BYTES} bytes) and 1024 messages may`)
    expect(ctx.tools.has('pings__go')).to.equal(false)
    const pid = fixturePid(pidFile)
    await eventually('the server process is gone', () => !alive(pid))
    await eventually('its group is no longer tracked', () => !liveServerGroups().includes(pid))
    expect(drainListeners()).to.deep.equal([])
  })

  it('calls queued for a server that stopped reading fail MCP_SERVER_CLOSED naming the bound, not after callTimeout', async () => {
    // The tool itself, not by name through the registry: the calls must all reach the server before it is given up.
    const policy = { ...client.DEFAULT_SENT_SERVER_POLICY, maxMessageBytes: BOUND, killGrace: 200, callTimeout: 60_000 }
    const servers = await client.startSentServers([{ name: 'deaf', command: process.execPath, args: [HOSTILE, 'deaf', pidFile] }],
      policy, dir, ctx.logger('spec'))
    try {
      const blob = 'x'.repeat(BOUND / 2)
      const calls = Array.from({ length: 10 }, () => servers.tools[0].execute({ blob }, makeExec()))
      for (const result of await within(Promise.all(calls), 15_000, 'the calls')) {
        expect(result.isError).to.equal(true)
        expect(result.content).to.include('MCP_SERVER_CLOSED').and.include(NAMED)
      }
      await eventually('the server process is gone', () => !alive(fixturePid(pidFile)))
    } finally {
      await servers.close()
    }
  })

  it('a message line over maxMessageBytes stops the server, and the call and the log name the limit', async () => {
    ctx.plugin(client, { name: 'long', command: process.execPath, args: [HOSTILE, 'long-line', pidFile, String(BOUND + 1024)], maxMessageBytes: BOUND })
    await mounted('long__go')
    const result = await call('long__go')
    expect(result.isError).to.equal(true)
    expect(result.content).to.include('MCP_SERVER_CLOSED').and.include(`over ${NAMED}`)
    await eventually('the server was given up', () => !!lostLine())
    expect(lostLine()).to.include(`over ${NAMED}`)
    expect(ctx.tools.has('long__go')).to.equal(false)
  })

  it('the bound is on a line, not on what one read brings: many short lines at once pass a small maxMessageBytes', async () => {
    ctx.plugin(client, { name: 'burst', command: process.execPath, args: [HOSTILE, 'burst', pidFile, '900'], maxMessageBytes: 1024 })
    await mounted('burst__go')
    expect(await call('burst__go')).to.deep.equal({ content: 'went' })
    expect(await call('burst__go')).to.deep.equal({ content: 'went' })
    expect(lostLine()).to.equal(undefined)
  })
})
