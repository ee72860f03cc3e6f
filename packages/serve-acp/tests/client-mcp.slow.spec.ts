/// <reference types="mocha" />
// The MCP servers an ACP client sends in session/new (Zed's context servers) are started for that
// session through @cordis-subagents/mcp: the session's agent calls their tools, another session does not
// see them, the env policy of a configured server applies (credentials not inherited, the client's env
// passed), closing the session or the app reaps the server's process, a list the policy forbids is
// refused (MCP_SERVER_REFUSED) and a server that does not start is a coded warning in the response.
// Driven by the ACP SDK's client against the bin; the client-sent server is the mcp package's fixture.
import { join } from 'node:path'
import { expect } from 'chai'
import { readFileSync } from 'node:fs'
import { processAlive as alive } from '@cordis-subagents/test-support'
import { appYml, build, newSession, prompt, refusal, ROOT, said, sdk, Workspace } from './helpers.js'

const FIXTURE = join(ROOT, 'packages/mcp/tests/fixtures/server.mjs')

function readLog(file: string): string {
  try {
    return readFileSync(file, 'utf8')
  } catch {
    return ''
  }
}


/** Polls `check` every 20 ms until it holds, or throws with `what` after `timeout` ms (a bound that only ends a hang). */
async function eventually(what: string, check: () => boolean, timeout = 20_000): Promise<void> {
  const until = Date.now() + timeout
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting until ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

function fixtureServer(name: string, log: string, env: Record<string, string> = {}) {
  return { name, command: process.execPath, args: [FIXTURE, log], env: Object.entries(env).map(([key, value]) => ({ name: key, value })) }
}

type Served = Awaited<ReturnType<Workspace['serve']>>

/** session/new (or resume) with these MCP servers. */
async function openWith(served: Served, cwd: string, mcpServers: unknown[], resume?: string): Promise<{ sessionId: string; _meta?: any }> {
  const params = { cwd, mcpServers: mcpServers as [] }
  if (resume) {
    await served.connection.agent.request(sdk.methods.agent.session.resume, { sessionId: resume, ...params })
    return { sessionId: resume }
  }
  return served.connection.agent.request(sdk.methods.agent.session.new, params)
}

function pidIn(log: string): number {
  const match = /pid (\d+)/.exec(readLog(log))
  if (!match) throw new Error(`no pid in ${log} yet`)
  return Number(match[1])
}

describe('serve-acp: the MCP servers a client sends', function () {
  this.timeout(90_000)
  let ws: Workspace

  before(() => build())
  beforeEach(() => {
    ws = new Workspace()
  })
  afterEach(async () => {
    await ws.dispose()
  })

  it('a session\'s agent calls its client\'s MCP tool; another session does not see it; session/close reaps the server', async () => {
    const served = await ws.serve(appYml(), { SPEC_API_KEY: 'do-not-pass' })
    expect(served.init.agentCapabilities.mcpCapabilities).to.deep.equal({ http: true, sse: false })
    const logA = join(ws.dir, 'a.log')
    const a = await openWith(served, ws.dir, [fixtureServer('fixture', logA, { FIXTURE_MARK: 'session a' })])
    expect(a._meta).to.equal(undefined)
    const b = await newSession(served, ws.dir)
    await eventually('the fixture logged its pid', () => /pid \d+/.test(readLog(logA)))
    const pid = pidIn(logA)

    await prompt(served, a.sessionId, 'tools?')
    await prompt(served, b.sessionId, 'tools?')
    expect(said(served, a.sessionId)).to.match(/tools: .*fixture__echo/)
    expect(said(served, b.sessionId)).to.not.include('fixture__')

    await prompt(served, a.sessionId, 'call fixture__echo {"text":"from the client\'s server"}')
    expect(said(served, a.sessionId)).to.include('called: from the client\'s server')
    // The env policy of a configured server: the client's env is passed, a host credential is not.
    await prompt(served, a.sessionId, 'call fixture__env {"names":["FIXTURE_MARK","SPEC_API_KEY"]}')
    expect(said(served, a.sessionId)).to.include('called: {"FIXTURE_MARK":"session a","SPEC_API_KEY":null}')

    // Session b's agent has no such tool: its call fails at our registry, never reaching session a's server.
    await prompt(served, b.sessionId, 'call fixture__echo {"text":"not for b"}')
    expect(said(served, b.sessionId)).to.include('called: ').and.not.include('called: not for b')

    expect(alive(pid)).to.equal(true)
    await served.connection.agent.request(sdk.methods.agent.session.close, { sessionId: a.sessionId })
    await eventually('the client\'s MCP server is reaped', () => !alive(pid), 20_000)
    expect(await served.close()).to.equal(0)
  })

  it('stopping the app reaps every session\'s MCP servers; a reopened session starts the servers its load sends', async () => {
    const served = await ws.serve(appYml())
    const logs = [join(ws.dir, 'one.log'), join(ws.dir, 'two.log')]
    const one = await openWith(served, ws.dir, [fixtureServer('one', logs[0])])
    await openWith(served, ws.dir, [fixtureServer('two', logs[1])])
    await eventually('both fixtures logged their pids', () => logs.every((log) => /pid \d+/.test(readLog(log))))
    const first = pidIn(logs[0])
    // session/resume of an open session: its servers are stopped, the ones the resume sends are started.
    const logThree = join(ws.dir, 'three.log')
    await openWith(served, ws.dir, [fixtureServer('three', logThree)], one.sessionId)
    await eventually('the first server is reaped', () => !alive(first), 20_000)
    await eventually('the resumed session\'s server logged its pid', () => /pid \d+/.test(readLog(logThree)))
    await prompt(served, one.sessionId, 'tools?')
    expect(said(served, one.sessionId)).to.match(/three__echo/).and.not.match(/one__echo/)
    const pids = [pidIn(logs[1]), pidIn(logThree)]
    expect(pids.map(alive)).to.deep.equal([true, true])
    expect(await served.close()).to.equal(0)
    await eventually('every client MCP server is reaped', () => pids.every((pid) => !alive(pid)), 20_000)
  })

  it('a list the policy forbids is refused MCP_SERVER_REFUSED and nothing starts; a server that fails to start is a coded warning', async () => {
    const served = await ws.serve(appYml({ serve: 'mcpServers:\n  commands: [/no/such/mcp-server]' }))
    const log = join(ws.dir, 'refused.log')
    const error = await refusal(openWith(served, ws.dir, [fixtureServer('fixture', log)]))
    expect((error.data as { code: string }).code).to.equal('MCP_SERVER_REFUSED')
    expect(error.message).to.match(/is not one this server may run \(allowed: \/no\/such\/mcp-server\); nothing was started/)
    const sse = await refusal(openWith(served, ws.dir, [{ type: 'sse', name: 'old', url: 'http://127.0.0.1:9/sse', headers: [] }]))
    expect((sse.data as { code: string }).code).to.equal('MCP_SERVER_REFUSED')
    expect(readLog(log)).to.equal('')

    const opened = await openWith(served, ws.dir, [{ name: 'missing', command: '/no/such/mcp-server', args: [], env: [] }])
    const failures: Array<{ name: string; code: string; message: string }> = opened._meta.cordisSubagents.mcpServerFailures
    expect(failures.map((f) => [f.name, f.code])).to.deep.equal([['missing', 'MCP_CONNECT_FAILED']])
    expect(failures[0].message).to.match(/did not start/)
    await prompt(served, opened.sessionId, 'echo still works')
    expect(said(served, opened.sessionId)).to.include('echoed: still works')
    expect(await served.close()).to.equal(0)
  })
})
