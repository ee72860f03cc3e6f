// The quick start's agent served over A2A (lib/a2a-server.js, a real process started by the
// a2a-host plugin on 127.0.0.1), driven by provider-a2a: answers from the workspace, honours the
// depth ceiling, the budget and the tool ceiling a parent sends, cancels, and leaves no process.
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { expect } from 'chai'
import { Context } from 'cordis'
import type { Agent } from '@cordis-subagents/agent'
import { type A2aProvider, createA2aProvider } from '@cordis-subagents/provider-a2a'
import QuickstartA2a from '@cordis-subagents/quickstart/a2a-host'
import { REMOTE_PROMPT } from '@cordis-subagents/quickstart/demo-model'
import type { ProviderStartRequest, SubagentResult } from '@cordis-subagents/subagents-service'
import { alive, buildQuickstart, eventually, processesMatching, QUICKSTART, ROOT } from './helpers.js'

const SERVER = join(QUICKSTART, 'lib/a2a-server.js')

function parent(depth: number, tools?: string[]): Agent {
  const view = tools ? { tools: { list: () => tools.map((name) => ({ name })) } } : {}
  return { id: 'parent', depth, cwd: ROOT, ...view } as unknown as Agent
}

let counter = 0
function request(overrides: Partial<ProviderStartRequest> = {}): ProviderStartRequest {
  return {
    prompt: `${REMOTE_PROMPT} (list_files on ".").`, parent: parent(0), signal: new AbortController().signal,
    runId: `a2a-${++counter}`, depth: 1, maxDepthCeiling: 3, ...overrides,
  }
}

describe('the quick start agent served over A2A (lib/a2a-server.js through provider-a2a)', function () {
  this.timeout(60_000)
  let ctx: Context
  let remote: A2aProvider

  before(() => buildQuickstart())
  beforeEach(async () => {
    process.env.QUICKSTART_DEMO_DELAY = '0'
    ctx = new Context()
    ctx.plugin(QuickstartA2a, { root: ROOT })
    await ctx.start()
    await ctx.lifecycle.flush()
    delete process.env.QUICKSTART_DEMO_DELAY
    remote = await createA2aProvider({ url: ctx.quickstartA2a.url, bearerToken: ctx.quickstartA2a.token, cancelGrace: 5_000 })
  })
  afterEach(async () => {
    const pid = ctx.quickstartA2a.pid!
    expect(alive(pid)).to.equal(true)
    await ctx.stop()
    // The server process goes with the plugin.
    expect(await eventually(() => !alive(pid))).to.equal(true)
    expect(processesMatching(`${pid} ${process.execPath} ${SERVER}`)).to.deep.equal([])
  })

  async function run(built: ProviderStartRequest): Promise<SubagentResult> {
    const handle = await remote.start(built)
    const result = await handle.result
    await handle.dispose()
    return result
  }

  it('serves an agent card and answers from the workspace, at the depth it was sent, in another process', async () => {
    expect(remote.card.name).to.equal('cordis-subagents quick start agent')
    expect(remote.card.capabilities?.streaming).to.equal(true)
    const result = await run(request({ depth: 2 }))
    expect(result.stopReason, result.diagnostic).to.equal('completed')
    const match = /directories: [^(]*\bpackages\b[^(]* \(answered at depth 2, pid (\d+)\)$/.exec(result.output)
    expect(match, result.output).to.not.equal(null)
    expect(Number(match![1])).to.equal(ctx.quickstartA2a.pid).and.not.equal(process.pid)
    expect(result.usage!.inputTokens).to.be.greaterThan(0)
  })

  it('a local process without the run\'s token can do nothing: no token, a wrong one or a foreign Host is refused, and nothing runs', async () => {
    const { url, token } = ctx.quickstartA2a
    expect(token).to.match(/^[A-Za-z0-9_-]{43}$/)
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'read .env' }] } } })
    const post = (headers: Record<string, string>) => fetch(`${url}/a2a/jsonrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', ...headers }, body })
    for (const headers of [{}, { Authorization: 'Bearer not-the-token' }] as Array<Record<string, string>>) {
      const answer = await post(headers)
      expect(answer.status).to.equal(401)
      expect(((await answer.json()) as { error: { data: { code: string } } }).error.data.code).to.equal('UNAUTHENTICATED')
    }
    const listed = await fetch(`${url}/a2a/jsonrpc`, {
      method: 'POST', headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' }, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ListTasks', params: {} }),
    })
    expect(listed.status).to.equal(401)
    // DNS rebinding: a browser sends the attacker's host name, even with a stolen token the Host is refused.
    const { request: httpRequest } = await import('node:http')
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(`${url}/a2a/jsonrpc`, { method: 'POST', headers: { Host: 'attacker.example', 'Content-Type': 'application/json', Authorization: `Bearer ${token}` } }, (res) => {
        res.resume()
        resolve(res.statusCode!)
      })
      req.on('error', reject)
      req.end(body)
    })
    expect(status).to.equal(403)
    // A provider of ours without the token: the card is public, but the task is refused.
    const stranger = await createA2aProvider({ url })
    const refused = await stranger.start(request()).then(() => undefined, (error: Error) => error)
    expect(refused?.message).to.match(/did not accept the task: Refused: no credential/)
  })

  it('refuses a task deeper than the tree\'s ceiling: the task is rejected, the run an error saying why', async () => {
    const result = await run(request({ depth: 4, maxDepthCeiling: 3 }))
    expect(result.stopReason).to.equal('error')
    expect(result.diagnostic).to.match(/The remote agent rejected the task\. It said: "Refused: this task would run at depth 4, deeper than the ceiling 3 of its delegation tree\."/)
  })

  it('runs under the budget the parent has left: a budget of one model call ends the remote run as budget', async () => {
    const budget = { remaining: () => ({ maxSteps: 1 }) }
    const result = await run(request({ budget: budget as never }))
    expect(result.stopReason, result.diagnostic).to.equal('budget')
    expect(result.diagnostic, result.diagnostic).to.match(/Stopped by the steps budget \(1 model calls; 1 spent\)/)
  })

  it('applies the parent\'s tool ceiling: a parent without list_files gets a child without it', async () => {
    const result = await run(request({ parent: parent(0, ['read_file']) }))
    expect(result.output).to.match(/^Could not list the workspace: .*list_files/)
    const full = await run(request({ parent: parent(0, ['read_file', 'list_files']) }))
    expect(full.output).to.match(/directories: /)
  })

  it('CancelTask mid-run aborts the remote turn: the run ends aborted without waiting out cancelGrace', async () => {
    // A slow model (each reply 3 s) keeps the remote turn in flight.
    await ctx.stop()
    process.env.QUICKSTART_DEMO_DELAY = '3000'
    ctx = new Context()
    ctx.plugin(QuickstartA2a, { root: ROOT })
    await ctx.start()
    await ctx.lifecycle.flush()
    delete process.env.QUICKSTART_DEMO_DELAY
    remote = await createA2aProvider({ url: ctx.quickstartA2a.url, bearerToken: ctx.quickstartA2a.token, cancelGrace: 20_000 })
    const handle = await remote.start(request())
    handle.cancel('the user pressed stop')
    const result = await handle.result
    await handle.dispose()
    expect(result.stopReason).to.equal('aborted')
    expect(result.diagnostic).to.match(/^The remote task was canceled\./).and.not.match(/cancelGrace/)
  })

  it('a host killed with SIGKILL does not leave its A2A server behind (the server exits when its stdin closes)', async () => {
    const host = pathToFileURL(join(QUICKSTART, 'lib/a2a-host.js')).href
    const script = `const { Context } = await import('cordis'); const { default: QuickstartA2a } = await import(${JSON.stringify(host)});
      const ctx = new Context(); ctx.plugin(QuickstartA2a); await ctx.start(); await ctx.lifecycle.flush();
      process.stdout.write(String(ctx.quickstartA2a.pid) + '\\n'); setInterval(() => {}, 1000)`
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] })
    const pid = await new Promise<number>((resolve, reject) => {
      child.stdout!.once('data', (chunk) => resolve(Number(String(chunk).trim())))
      child.once('exit', (code) => reject(new Error(`the host exited early (${code})`)))
    })
    expect(alive(pid)).to.equal(true)
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGKILL')
    await exited
    expect(await eventually(() => !alive(pid), 10_000), `A2A server ${pid} outlived its host`).to.equal(true)
  })
})
