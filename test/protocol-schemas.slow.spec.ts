// Issue 45 item 1, the ACP contract: every message serve-acp and provider-acp send and accept in
// their flows validates against the stable v1 `schema.json` that @agentclientprotocol/sdk ships.
// The messages are captured at the transport: a tee (test/support/jsonrpc-tee.mjs) between the
// client and the agent process records both directions, and ajv checks each as its side's message
// and as its method's params or result (test/support/acp-schema.ts). A2A: a2a-contract.slow.spec.ts.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable, Writable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import { createAcpProvider } from '@cordis-subagents/provider-acp'
import { assertNoLeftovers, FAST, fixtureArgs, logger, request } from '../packages/provider-acp/tests/helpers.js'
import { appYml, BIN, build, ROOT, sdk } from '../packages/serve-acp/tests/helpers.js'
import { AcpSchema, readCapture } from './support/acp-schema.js'

const TEE = fileURLToPath(new URL('./support/jsonrpc-tee.mjs', import.meta.url))

describe('ACP contract: our messages validate against the SDK\'s stable v1 schema.json', function () {
  this.timeout(90_000)
  const schema = new AcpSchema()
  let dir: string

  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'acp-contract-')) })
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  it('the check refuses what the schema refuses (a wrong update, a method it lacks, an orphan response)', () => {
    const line = (dir: 'in' | 'out', message: object) => ({ dir, text: JSON.stringify({ jsonrpc: '2.0', ...message }) })
    const { problems } = schema.check([
      line('in', { id: 1, method: 'initialize', params: { protocolVersion: 1, clientCapabilities: {} } }),
      line('out', { id: 1, result: { protocolVersion: 'one' } }),
      line('out', { method: 'session/update', params: { sessionId: 's', update: { sessionUpdate: 'agent_message_chunk' } } }),
      line('in', { id: 2, method: 'session/fork', params: { sessionId: 's', cwd: '/' } }),
      line('out', { id: 99, result: {} }),
    ])
    expect(problems.map((problem) => problem.split(':')[0])).to.deep.equal([
      '#1 agent → client', '#2 agent → client', '#3 client → agent', '#4 agent → client',
    ])
    expect(problems[2]).to.include('session/fork has no Request in the stable schema')
  })

  it('serve-acp (the bin, under the ACP SDK client): new, prompts with tool calls, a parked question, list, close, resume, load, errors', async () => {
    build()
    const log = join(dir, 'serve.jsonl')
    const store = join(dir, 'store')
    const config = join(dir, 'app.yml')
    writeFileSync(config, appYml({ serve: `store: ${JSON.stringify(store)}\ncontextWindow: 1000` }))
    const child = spawn(process.execPath, [TEE, log, process.execPath, BIN, config], { cwd: ROOT, stdio: ['pipe', 'pipe', 'ignore'] })
    const exited = new Promise((resolve) => child.once('exit', resolve))
    const connection = sdk.client({ name: 'contract-test' })
      .onNotification(sdk.methods.client.session.update, () => {})
      .connect(sdk.ndJsonStream(
        Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>,
        Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>,
      ))
    const agent = connection.agent
    try {
      const clientCapabilities = { fs: { readTextFile: false, writeTextFile: false } }
      await agent.request(sdk.methods.agent.initialize, { protocolVersion: 1, clientCapabilities })
      const { sessionId } = await agent.request(sdk.methods.agent.session.new, { cwd: dir, mcpServers: [] })
      const prompt = (text: string) => agent.request(sdk.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] })
      await prompt('echo contract')
      expect((await prompt('ask which branch?'))._meta).to.have.nested.property('cordisSubagents.question')
      await prompt('main')
      await agent.request(sdk.methods.agent.session.list, {})
      await agent.request(sdk.methods.agent.session.close, { sessionId })
      await agent.request(sdk.methods.agent.session.resume, { sessionId, cwd: dir, mcpServers: [] })
      await agent.request(sdk.methods.agent.session.load, { sessionId, cwd: dir, mcpServers: [] })
      await agent.request(sdk.methods.agent.session.prompt, { sessionId: 'no-such-session', prompt: [{ type: 'text', text: 'x' }] }).catch(() => {})
      await agent.request(sdk.methods.agent.session.new, { cwd: 'relative', mcpServers: [] }).catch(() => {})
    } finally {
      child.stdin!.end()
      await exited
    }
    const { problems, methods } = schema.check(readCapture(log))
    expect(problems).to.deep.equal([])
    expect([...methods].sort()).to.deep.equal([
      'initialize', 'session/close', 'session/list', 'session/load', 'session/new', 'session/prompt', 'session/resume', 'session/update',
    ])
  })

  const provided = [
    { mode: 'stream', what: 'text, thoughts, a plan, tool calls and usage' },
    { mode: 'permission', arg: 'with-reject', what: 'a permission request answered' },
    { mode: 'served-question', what: 'a turn that parks on a question (`_meta`)' },
    { mode: 'slow', what: 'a cancelled turn (session/cancel)', cancel: true },
  ]
  for (const { mode, arg, what, cancel } of provided) {
    it(`provider-acp with the fixture agent: ${what}`, async () => {
      const log = join(dir, `${mode}.jsonl`)
      const provider = createAcpProvider({
        command: process.execPath, args: [TEE, log, process.execPath, ...fixtureArgs(mode, arg)], logger, ...FAST,
        permission: 'allow',
      })
      const controller = new AbortController()
      const req = request({ signal: controller.signal, parent: { id: 'parent-1', depth: 0, cwd: dir } as never })
      const run = await provider.start(req)
      if (cancel) {
        // Cancel once the turn has streamed its first text: the fixture then waits for session/cancel.
        const deadline = Date.now() + 30_000
        while (!req.updates.some((update) => update.kind === 'text') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
        controller.abort()
      }
      await run.result.catch(() => {})
      await run.dispose()
      await provider.reaped()
      const captured = readCapture(log)
      const { problems, methods } = schema.check(captured)
      expect(problems).to.deep.equal([])
      expect(methods).to.include.members(['initialize', 'session/new', 'session/prompt'])
      if (cancel) expect(methods).to.include('session/cancel')
      if (mode === 'permission') expect(methods).to.include('session/request_permission')
      assertNoLeftovers()
    })
  }

  it('provider-acp on a reused process: session/close of an ended session, session/resume of a parent\'s session', async () => {
    const log = join(dir, 'sessions.jsonl')
    const provider = createAcpProvider({
      command: process.execPath, args: [TEE, log, process.execPath, ...fixtureArgs('sessions')], logger, ...FAST,
      env: { ...FAST.env, ACP_FIXTURE_SESSION_CAPS: 'close,resume', ACP_FIXTURE_STATE: dir }, reuse: true, resume: 'request',
    })
    try {
      const parent = { id: 'parent-1', depth: 0, cwd: dir } as never
      // Not kept (no resume asked): closed when the process is taken back; then a kept one, continued.
      for (const resume of [false, true, true]) {
        const run = await provider.start(request({ parent, resume, prompt: 'go' }))
        expect((await run.result).stopReason).to.equal('completed')
        await run.dispose()
      }
    } finally {
      await provider.stop()
    }
    const { problems, methods } = schema.check(readCapture(log))
    expect(problems).to.deep.equal([])
    expect(methods).to.include.members(['session/close', 'session/resume'])
    assertNoLeftovers()
  })

  it('provider-acp fork child: session/fork of a parent\'s kept session validates against the unstable schema (the only one that has it)', async () => {
    const log = join(dir, 'fork.jsonl')
    const provider = createAcpProvider({
      command: process.execPath, args: [TEE, log, process.execPath, ...fixtureArgs('sessions')], logger, ...FAST,
      env: { ...FAST.env, ACP_FIXTURE_SESSION_CAPS: 'fork,resume', ACP_FIXTURE_STATE: dir }, context: 'fork', resume: 'per-parent',
    })
    try {
      const parent = { id: 'parent-1', depth: 0, cwd: dir } as never
      for (let i = 0; i < 2; i++) {
        const run = await provider.start(request({ parent, prompt: 'go' }))
        expect((await run.result).stopReason).to.equal('completed')
        await run.dispose()
      }
    } finally {
      await provider.stop()
    }
    const { problems, methods } = new AcpSchema('unstable').check(readCapture(log))
    expect(problems).to.deep.equal([])
    expect(methods).to.include.members(['session/new', 'session/fork', 'session/prompt'])
    assertNoLeftovers()
  })
})
