/// <reference types="mocha" />
// What an outside MCP server makes this client log is bounded. A listing used to log one warning per skipped tool, on
// every listing (10,000 bad names: 10,000 lines; a `tools/list_changed` stream repeats them), with a 1 MiB name
// embedded whole; a client's servers that did not start were logged one warning each, with the server's whole (redacted,
// 64 KiB) answer on dozens of physical lines. Now one line per listing and one per connect batch, each cut and on one
// line. In-process: a fake connection and registry for the listing, a stubbed `fetch` for the HTTP servers.
import { tmpdir } from 'node:os'
import { expect } from 'chai'
import { type Context, Logger } from 'cordis'
import type { Tool as McpTool } from '@modelcontextprotocol/sdk/types.js'
import type { Tool } from '@cordis-subagents/tools'
import { captureLogs } from '../../../test/support/logs.js'
import type { Connection } from '../src/connection.js'
import { ToolMount } from '../src/mount.js'
import { mountedName } from '../src/names.js'
import { DEFAULT_SENT_SERVER_POLICY, startSentServers } from '../src/client-servers.js'

/** The most characters one of these lines may have (the quoted heads and cut causes fit well within it). */
const LINE_BOUND = 2_000
const BOUNDS = { maxParts: 16, maxPartChars: 16 * 1024, maxImages: 0, maxImageBytes: 0 }

const tool = (name: string, fields: Partial<McpTool> = {}): McpTool => ({ name, inputSchema: { type: 'object' }, ...fields }) as McpTool
const connection = { schemaCheck: () => () => [], call: async () => ({ content: [] }) } as unknown as Connection

/** A ToolMount on a registry that records what it holds; `refuse` names the tools it throws for. */
function mountOf(maxTools = 128, refuse: string[] = []) {
  const registered = new Set<string>()
  const ctx = {
    tools: {
      register(t: Tool) {
        if (refuse.includes(t.name)) throw new Error(`refused \x1b[31m${t.name}\x1b[0m\nsecond line`)
        registered.add(t.name)
        return () => registered.delete(t.name)
      },
    },
  } as unknown as Context
  const options = { server: 'fx', deny: [], maxTools, callTimeout: 1000, bounds: BOUNDS }
  const mount = new ToolMount(ctx, connection, options, new Logger('mcp:fx'))
  return { mount, registered }
}

/** Every line is one physical line within the bound. */
function expectBounded(lines: string[]) {
  for (const line of lines) {
    expect(line.length, line.slice(0, 200)).to.be.at.most(LINE_BOUND)
    expect(line).not.to.match(/[\n\r\x1b]/)
  }
}

describe('@cordis-subagents/mcp: a server cannot flood the log', () => {
  let logs: ReturnType<typeof captureLogs>
  beforeEach(() => { logs = captureLogs() })
  afterEach(() => logs.restore())
  const warnings = () => logs.records.filter((r) => r.type === 'warn').map((r) => r.content)

  it('a listing of 10,000 names too long logs one bounded line, and each listing again one; the good tool is mounted', () => {
    const { mount, registered } = mountOf()
    const bad = Array.from({ length: 10_000 }, (_, i) => tool(`t${String(i).padStart(6, '0')}_${'x'.repeat(63)}`))
    mount.sync([...bad, tool('ok')])
    expect(mount.names()).to.deep.equal(['fx__ok'])
    expect([...registered]).to.deep.equal(['fx__ok'])
    expect(warnings()).to.have.length(1)
    expect(warnings()[0]).to.include('fx: 10000 of 10001 listed tools skipped: 10000 whose name is over 64 characters as fx__<tool>')
    expect(warnings()[0]).to.include(`(first "t000000_${'x'.repeat(63)}" (71 characters))`)
    for (let i = 0; i < 5; i++) mount.sync([...bad, tool('ok')])
    expect(warnings()).to.have.length(6)
    expectBounded(warnings())
  })

  it('10,000 tools with one name log one line; the first of them is the one mounted', () => {
    const { mount } = mountOf()
    mount.sync([tool('a.b', { description: 'first' }), tool('a_b'), ...Array.from({ length: 10_000 }, () => tool('dup'))])
    expect(mount.names().sort()).to.deep.equal(['fx__a_b', 'fx__dup'])
    expect(warnings()).to.have.length(1)
    expect(warnings()[0]).to.include('fx: 10000 of 10002 listed tools skipped: 10000 named like an earlier tool of the listing')
    expect(warnings()[0]).to.include('(first "a_b" as fx__a_b)')
    expectBounded(warnings())
  })

  it('a 1 MiB name over many lines is skipped on its length: the reason does not carry it, the line quotes a clean head', () => {
    const huge = `\x1b[2J${'y'.repeat(1000)}\n`.repeat(1024)
    const named = mountedName('fx', huge)
    expect(JSON.stringify(named).length).to.be.below(100)
    expect(named).to.deep.equal({ skip: 'too-long' })
    const { mount } = mountOf()
    mount.sync([tool(huge), tool('ok')])
    expect(mount.names()).to.deep.equal(['fx__ok'])
    expect(warnings()).to.have.length(1)
    expectBounded(warnings())
    expect(warnings()[0]).to.include(`(first "${'y'.repeat(96)}" (${huge.length} characters))`)
  })

  it('every kind of skip in one listing is one line, each kind counted once with its first, and the rest is mounted', () => {
    const { mount } = mountOf(5, ['fx__refused'])
    mount.sync([
      tool(''), tool(''),
      tool(`\x1b]0;title\x07l\n${'o'.repeat(70)}`), tool('o'.repeat(70)),
      tool('ok'), tool('o_k'), tool('o.k'),
      tool('big', { description: 'd'.repeat(70 * 1024) }),
      tool('refused'), tool('kept'),
      tool('late1'), tool('late2'), tool('late3'),
    ])
    expect(mount.names().sort()).to.deep.equal(['fx__kept', 'fx__o_k', 'fx__ok'])
    expect(warnings()).to.have.length(1)
    const [line] = warnings()
    expect(line).to.include('fx: 10 of 13 listed tools skipped: 2 without a name; 2 whose name is over 64 characters')
    expect(line).to.include(`(first "l ${'o'.repeat(70)}" (82 characters))`)
    expect(line).to.include('1 named like an earlier tool of the listing once sanitized (first "o.k" as fx__o_k)')
    expect(line).to.include('3 listed after the first maxTools (5) were taken (first "late1")')
    expect(line).to.include('1 whose name, description and input schema are over 65536 characters of JSON (first "big")')
    expect(line).to.include('1 the tool registry refused (first fx__refused: refused fx__refused second line)')
    expectBounded(warnings())
  })
})

describe('@cordis-subagents/mcp: a client\'s servers that did not start are one bounded log line', () => {
  let logs: ReturnType<typeof captureLogs>
  const realFetch = globalThis.fetch
  let fetched = 0
  beforeEach(() => {
    logs = captureLogs()
    fetched = 0
    // Every server answers HTTP 500 with 1 MiB of text over 1 024 lines (no socket: the SDK's transport calls fetch).
    // A server at /mcp/<n> answers its own text (`<n>:` before it), so servers can fail with different causes.
    globalThis.fetch = async (input: string | URL | Request) => {
      fetched++
      const own = /\/mcp\/(\d+)$/.exec(String(input))?.[1]
      const body = `${own ? `${own}:` : ''}${`${'E'.repeat(1000)}\n`.repeat(1024)}`
      return new Response(body, { status: 500, headers: { 'content-type': 'text/plain' } })
    }
  })
  afterEach(() => {
    globalThis.fetch = realFetch
    logs.restore()
  })
  const warnings = () => logs.records.filter((r) => r.type === 'warn').map((r) => r.content)

  it('one server whose error is 1 MiB logs one line, cut and on one line; the client still gets its failure', async () => {
    const sent = [{ type: 'http' as const, name: 'dead', url: 'http://mcp.invalid/mcp' }]
    const servers = await startSentServers(sent, DEFAULT_SENT_SERVER_POLICY, tmpdir(), new Logger('spec'))
    await servers.close()
    expect(fetched).to.be.greaterThan(0)
    expect(servers.failed.map((f) => [f.name, f.code])).to.deep.equal([['dead', 'MCP_CONNECT_FAILED']])
    expect(servers.failed[0].message).to.match(/did not start/)
    expect(warnings()).to.have.length(1)
    expectBounded(warnings())
    expect(warnings()[0]).to.match(/^MCP_CONNECT_FAILED: 1 of the 1 MCP servers the client sent did not start: /)
    expect(warnings()[0]).to.match(/: dead \(The MCP server did not start .*EEEE…\)\.$/)
  })

  it('eight such servers in one batch log one line naming them all, their one cause quoted once', async () => {
    const sent = Array.from({ length: 8 }, (_, i) => ({ type: 'http' as const, name: `dead${i}`, url: 'http://mcp.invalid/mcp' }))
    const servers = await startSentServers(sent, DEFAULT_SENT_SERVER_POLICY, tmpdir(), new Logger('spec'))
    await servers.close()
    expect(servers.failed).to.have.length(8)
    expect(warnings()).to.have.length(1)
    const [line] = warnings()
    // They failed alike: one cause, quoted once, for all eight.
    expect(line).to.match(/^MCP_CONNECT_FAILED: 8 of the 8 MCP servers the client sent did not start: /)
    expect(line).to.match(/: dead0, dead1, dead2, dead3, dead4, dead5, dead6, dead7 \(The MCP server did not start [^()]*…\)\.$/)
    expectBounded(warnings())
  })
  it('servers failing for six different causes: four quoted, the rest counted, still one bounded line', async () => {
    const sent = Array.from({ length: 6 }, (_, i) => ({ type: 'http' as const, name: `d${i}`, url: `http://mcp.invalid/mcp/${i}` }))
    const servers = await startSentServers(sent, DEFAULT_SENT_SERVER_POLICY, tmpdir(), new Logger('spec'))
    await servers.close()
    expect(servers.failed).to.have.length(6)
    expect(warnings()).to.have.length(1)
    const [line] = warnings()
    const cause = 'The MCP server did not start or answer initialize: Streamable HTTP error: Error POSTing to endpoint'
    for (const i of [0, 1, 2, 3]) expect(line).to.include(`d${i} (${cause}: ${i}:EEE`)
    expect(line).not.to.include('d4 (')
    expect(line).to.match(/…\); 2 more for other causes\.$/)
    expectBounded(warnings())
  })
})
