// The quick start's ACP agent driven by a plain ACP client (the SDK's client side), as acpx or an
// editor would: one turn at a time per session (a concurrent prompt never steals the cancel), the
// session's cwd (absolute, existing) confines the tools, and session/load continues a session in
// a new process with its history replayed. The agent is serve-acp's bin on acp-agent.yml, as cordis.yml starts it.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable, Writable } from 'node:stream'
import { expect } from 'chai'
import * as sdk from '@agentclientprotocol/sdk'
import { ROOT_PROMPT } from '@cordis-subagents/quickstart/demo-model'
import { ACP_AGENT, buildQuickstart, offlineEnv, ROOT } from './helpers.js'

interface Client {
  child: ChildProcess
  connection: ReturnType<ReturnType<typeof sdk.client>['connect']>
  updates: Array<{ sessionId: string; update: any }>
  close(): Promise<void>
}

function text(response: unknown): string {
  return JSON.stringify(response)
}

describe('quick start ACP agent driven by a plain ACP client', function () {
  this.timeout(30_000)
  const clients: Client[] = []
  let stateDir: string
  let elsewhere: string

  before(() => buildQuickstart())

  beforeEach(() => {
    stateDir = mkdtempSync(join(tmpdir(), 'acp-sessions-'))
    elsewhere = mkdtempSync(join(tmpdir(), 'acp-cwd-'))
    writeFileSync(join(elsewhere, 'package.json'), JSON.stringify({ name: 'elsewhere-app', workspaces: ['apps/*'], scripts: { serve: 'node .' } }))
  })

  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()))
    rmSync(stateDir, { recursive: true, force: true })
    rmSync(elsewhere, { recursive: true, force: true })
  })

  async function connect(delay = '0'): Promise<Client> {
    const child = spawn(process.execPath, ACP_AGENT, {
      cwd: ROOT,
      env: offlineEnv({ QUICKSTART_STATE_DIR: stateDir, QUICKSTART_DEMO_DELAY: delay }),
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    child.stderr!.resume()
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    const updates: Client['updates'] = []
    const app = sdk.client({ name: 'test-client' })
      .onNotification(sdk.methods.client.session.update, ({ params }) => { updates.push(params as any) })
    const connection = app.connect(sdk.ndJsonStream(
      Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>,
      Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>,
    ))
    const client: Client = {
      child,
      connection,
      updates,
      async close() {
        child.stdin!.end()
        const timer = setTimeout(() => child.kill('SIGKILL'), 3000)
        await exited
        clearTimeout(timer)
      },
    }
    clients.push(client)
    const init = await connection.agent.request(sdk.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} })
    expect(init.agentCapabilities?.loadSession).to.equal(true)
    return client
  }

  const newSession = (client: Client, cwd: string) =>
    client.connection.agent.request(sdk.methods.agent.session.new, { cwd, mcpServers: [] })
  const prompt = (client: Client, sessionId: string, words: string) =>
    client.connection.agent.request(sdk.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: words }] })
  const said = (client: Client, sessionId: string, kind: string) => client.updates
    .filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === kind)
    .map((u) => u.update.content?.text as string)

  it('a second prompt while a turn runs is refused, and session/cancel still cancels the first turn', async () => {
    const client = await connect('400')
    const { sessionId } = await newSession(client, ROOT)
    const first = prompt(client, sessionId, `${ROOT_PROMPT} and report its workspaces and npm scripts.`)
    first.catch(() => {})
    let refusal: unknown
    try {
      await prompt(client, sessionId, 'and another thing')
    } catch (error) {
      refusal = error
    }
    expect(refusal).to.be.instanceOf(sdk.RequestError)
    expect((refusal as Error).message).to.include('a turn is already running')
    await client.connection.agent.notify(sdk.methods.agent.session.cancel, { sessionId })
    const response = await first
    expect(response.stopReason).to.equal('cancelled')
  })

  it('a session works in its own cwd; a relative or missing cwd is refused', async () => {
    const client = await connect()
    const { sessionId } = await newSession(client, elsewhere)
    const response = await prompt(client, sessionId, `${ROOT_PROMPT} and report its workspaces and npm scripts.`)
    expect(response.stopReason).to.equal('end_turn')
    expect(said(client, sessionId, 'agent_message_chunk').join('')).to.include('elsewhere-app: workspaces apps/*; npm scripts serve')
    for (const cwd of ['packages', join(elsewhere, 'missing')]) {
      let error: unknown
      try {
        await newSession(client, cwd)
      } catch (caught) {
        error = caught
      }
      expect(error, cwd).to.be.instanceOf(sdk.RequestError)
      expect((error as Error).message + text((error as sdk.RequestError).data)).to.match(/absolute path|not an existing directory/)
    }
  })

  it('session/load continues a stored session in a new process, replaying its history first', async () => {
    const first = await connect()
    const { sessionId } = await newSession(first, ROOT)
    await prompt(first, sessionId, `${ROOT_PROMPT} and report its workspaces and npm scripts.`)
    const answer = said(first, sessionId, 'agent_message_chunk').at(-1)!
    expect(answer).to.match(/^cordis-subagents: workspaces/)
    await first.close()

    const second = await connect()
    await second.connection.agent.request(sdk.methods.agent.session.load, { sessionId, cwd: ROOT, mcpServers: [] })
    expect(said(second, sessionId, 'user_message_chunk')[0]).to.include(ROOT_PROMPT)
    expect(said(second, sessionId, 'agent_message_chunk')).to.include(answer)
    const before = second.updates.length
    await prompt(second, sessionId, 'Which package has the most internal dependencies?')
    // The demo model treats a prompt with earlier turns as a follow-up: it sees the loaded history.
    const followUp = second.updates.slice(before).filter((u) => u.update.sessionUpdate === 'agent_message_chunk').map((u) => u.update.content.text).join('')
    expect(followUp).to.include('follow-up')

    for (const bad of ['../../etc/passwd', 'session-1-00000000-0000-0000-0000-000000000000']) {
      let error: unknown
      try {
        await second.connection.agent.request(sdk.methods.agent.session.load, { sessionId: bad, cwd: ROOT, mcpServers: [] })
      } catch (caught) {
        error = caught
      }
      expect(error, bad).to.be.instanceOf(sdk.RequestError)
    }
  })
})
