// serve-acp on the process's own stdin/stdout (no `transport`), unloaded and loaded again in a host process whose
// stdin and stdout are pipes to this spec's ACP client (tests/fixtures/stdio-reloads.ts, driven over IPC). Every load
// serves: the client's `initialize` after each reload is answered, over the same pipes. Unloads add nothing to
// process.stdout's listeners and leave process.stdin and stdout open; a prompt running at an unload is answered
// `cancelled` before the next load serves. Before, each load added a listener of each kind to process.stdout (a
// MaxListenersExceededWarning at the 11th), and the second unload destroyed process.stdin, so no later load served.
import { type ChildProcess, spawn } from 'node:child_process'
import { Readable, Writable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import * as sdk from '@agentclientprotocol/sdk'
import { eventually } from '@cordis-subagents/test-support'

const HOST = fileURLToPath(new URL('./fixtures/stdio-reloads.ts', import.meta.url))
const RELOADS = 12

interface HostState {
  type: string
  stdout: Record<string, number>
  stdin: Record<string, number>
  stdinDestroyed: boolean
  stdoutDestroyed: boolean
}

/** `promise`, or an error naming `what` after `ms`. */
function within<T>(promise: Promise<T>, what: string, ms = 5_000): Promise<T> {
  let timer!: NodeJS.Timeout
  const late = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms) })
  return Promise.race([promise, late]).finally(() => clearTimeout(timer))
}

describe('serve-acp on stdio: unloaded and loaded again', function () {
  this.timeout(60_000)
  let child: ChildProcess | undefined

  afterEach(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child!.once('exit', resolve))
      child.kill('SIGKILL')
      await exited
    }
    child = undefined
  })

  it('serves again after every reload, adds no stdout listeners and keeps stdin; a prompt at an unload is answered', async () => {
    child = spawn(process.execPath, ['--import', 'tsx', '--conditions=cordis-subagents-source', HOST], { stdio: ['pipe', 'pipe', 'pipe', 'ipc'] })
    let stderr = ''
    child.stderr!.on('data', (chunk) => { stderr += chunk })
    const messages: HostState[] = []
    child.on('message', (message: HostState) => { messages.push(message) })
    const next = async (type: string) => {
      const message = await eventually(() => messages.find((m) => m.type === type), `the host says ${type}`, 30_000)
      messages.splice(messages.indexOf(message), 1)
      return message
    }
    const exited = new Promise<number | null>((resolve) => child!.once('exit', resolve))
    const connection = sdk.client({ name: 'spec' }).connect(sdk.ndJsonStream(
      Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>,
      Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>,
    ))
    const agent = connection.agent
    const initialize = (what: string) =>
      within(agent.request(sdk.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} }), what)

    const first = await next('ready')
    await initialize('the first load answers initialize')
    for (let i = 1; i <= RELOADS; i++) {
      child.send('reload')
      const state = await next('reloaded')
      expect(state.stdinDestroyed, `process.stdin destroyed after unload ${i}`).to.equal(false)
      expect(state.stdout, `process.stdout's listeners after ${i} reloads`).to.deep.equal(first.stdout)
      await initialize(`load ${i + 1} answers initialize`)
    }

    // A prompt running when the plugin unloads is answered (cancelled); the next load serves on the same pipes.
    const { sessionId } = await within(agent.request(sdk.methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] }), 'session/new')
    const prompt = agent.request(sdk.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'wait' }] })
    await next('waiting')
    child.send('reload')
    expect(await within(prompt, 'the running prompt is answered at the unload')).to.include({ stopReason: 'cancelled' })
    await next('reloaded')
    await initialize('the load after it answers initialize')
    const { sessionId: again } = await within(agent.request(sdk.methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] }), 'session/new after it')
    const hi = agent.request(sdk.methods.agent.session.prompt, { sessionId: again, prompt: [{ type: 'text', text: 'hi' }] })
    const answer = await within(hi, 'a prompt after it')
    expect(answer).to.include({ stopReason: 'end_turn' })

    child.send('stop')
    const stopped = await next('stopped')
    expect(stopped.stdout, 'process.stdout\'s listeners after ctx.stop()').to.deep.equal(first.stdout)
    expect(stopped.stdinDestroyed).to.equal(false)
    expect(stopped.stdoutDestroyed).to.equal(false)
    child.stdin!.end()
    expect(await within(exited, 'the host exits once its stdin ends')).to.equal(0)
    expect(stderr).not.to.include('MaxListenersExceededWarning')
  })
})
