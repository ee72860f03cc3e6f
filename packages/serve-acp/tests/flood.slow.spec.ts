// A client that writes requests and does not read the server's output: the server stops reading its input once
// about MAX_QUEUED_OUTPUT_BYTES of answers wait for the client, and reads on (answering every request) once the client
// reads. Before, it read everything and queued every answer in memory (≈ 4 KB a request, without bound). And at most
// maxRequestsInFlight requests are handled at once: one more is answered at once with TOO_MANY_REQUESTS.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import { Context } from 'cordis'
import * as sdk from '@agentclientprotocol/sdk'
import AgentRuntime, { ScriptedModel } from '@cordis-subagents/agent'
import ToolRegistry from '@cordis-subagents/tools'
import { eventually } from '@cordis-subagents/test-support'
import * as ServeAcp from '../src/index.js'
import { MAX_QUEUED_OUTPUT_BYTES } from '../src/flow.js'
import { appYml, refusal, ROOT } from './helpers.js'

const REQUESTS = 20_000
const PER_CHUNK = 100
/** Requests of the bin's test: what the pipe and stream buffers on both sides hold is not ours to bound. */
const PIPED = 30_000
const BIN_SOURCE = fileURLToPath(new URL('../src/bin.ts', import.meta.url))
const initialize = (id: number) => JSON.stringify({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: 1, clientCapabilities: {} } }) + '\n'

/** Waits until `count()` stops moving (the same after `every` ms) or reaches `all`; returns it. */
async function settled(count: () => number, all: number, what: string): Promise<number> {
  let last = -1
  await eventually(() => {
    const still = count() === last
    last = count()
    return last === all || still
  }, what, { timeout: 30_000, every: 500 })
  return count()
}

/** Reads NDJSON answers from `chunks` until `total` came; each must answer `initialize` number `first + answered`, in order. */
async function readAnswers(chunks: AsyncIterable<Uint8Array>, total: number, first = 0): Promise<number> {
  const decoder = new TextDecoder()
  let text = ''
  let answered = 0
  for await (const chunk of chunks) {
    text += decoder.decode(chunk, { stream: true })
    const lines = text.split('\n')
    text = lines.pop()!
    for (const line of lines) {
      const message = JSON.parse(line)
      expect(message.id).to.equal(first + answered)
      expect(message.result.protocolVersion).to.equal(1)
      answered++
    }
    if (answered === total) break
  }
  return answered
}

/** The serve-acp plugin on web streams, over a cordis app with a scripted model that answers `reply(prompt)`. */
async function app(
  config: Record<string, unknown>, input: ReadableStream<Uint8Array>, output: WritableStream<Uint8Array>, reply: () => Promise<string>,
) {
  const ctx = new Context()
  ctx.plugin(ToolRegistry)
  ctx.plugin(AgentRuntime, { model: 'scripted' })
  const model = new ScriptedModel(async () => ScriptedModel.text(await reply()))
  ctx.plugin({ name: 'model', inject: ['agents'], apply: (c: Context) => { c.agents.registerModel('scripted', model) } })
  await ctx.start()
  ctx.plugin(ServeAcp, { transport: { input, output }, loadSession: false, ...config } as never)
  await ctx.lifecycle.flush()
  return ctx
}

describe('serve-acp: a client that floods requests', function () {
  this.timeout(60_000)
  let ctx: Context | undefined
  afterEach(async () => {
    await ctx?.stop()
    ctx = undefined
  })

  it(`${REQUESTS} initialize requests and no reading: the server stops reading its input, and answers all of them once the client reads`, async () => {
    // The client's side of the input, written only as fast as the server reads it: `sent` counts what it took.
    let sent = 0
    const encoder = new TextEncoder()
    const input = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= REQUESTS) return controller.close()
        let lines = ''
        for (const end = sent + PER_CHUNK; sent < end; sent++) lines += initialize(sent)
        controller.enqueue(encoder.encode(lines))
      },
    }, { highWaterMark: 0 })
    const toClient = new TransformStream<Uint8Array, Uint8Array>()
    ctx = await app({}, input, toClient.writable, async () => 'hi')
    // The server reads until it stops (or has read everything): `sent` no longer moves for a while.
    await settled(() => sent, REQUESTS, 'the server stopped reading or read everything')
    // One answer is over 200 bytes: the server took no more than the answers its output bound holds, plus a chunk.
    const bound = MAX_QUEUED_OUTPUT_BYTES / 200 + 2 * PER_CHUNK
    expect(sent, 'requests the server read while its output was not read').to.be.below(REQUESTS).and.at.most(bound)
    // The client reads: the server reads the rest, and every request is answered once, in order.
    expect(await readAnswers(toClient.readable, REQUESTS)).to.equal(REQUESTS)
    expect(sent).to.equal(REQUESTS)
  })

  it('the bin on stdin/stdout: a client that writes and does not read finds its writes backed up; once it reads, all are answered', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'serve-acp-flood-'))
    const config = join(dir, 'app.yml')
    writeFileSync(config, appYml({ serve: 'loadSession: false' }))
    // The bin from source (the spec's own loader), as the client starts it: stdin and stdout are its pipes.
    const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('SUBAGENT_')))
    const flags = ['--import', 'tsx', '--conditions=cordis-subagents-source']
    const child = spawn(process.execPath, [...flags, BIN_SOURCE, config], { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] })
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
    let stderr = ''
    child.stderr!.on('data', (chunk) => { stderr += chunk })
    try {
      // The server is up (it answered a first request) before the flood, so what the pipe takes is what it reads.
      const first = new Promise<string>((resolve) => {
        let out = ''
        const read = (chunk: Buffer) => {
          out += chunk
          if (!out.includes('\n')) return
          child.stdout!.off('data', read).pause()
          resolve(out)
        }
        child.stdout!.on('data', read)
      })
      child.stdin!.write(initialize(0))
      expect(JSON.parse(await first).id).to.equal(0)
      // Written a chunk at a time, each once the pipe took the one before: `flushed` counts the requests it took.
      let flushed = 0
      const writing = (async () => {
        for (let id = 1; id <= PIPED; id += PER_CHUNK) {
          let lines = ''
          for (let i = id; i < id + PER_CHUNK; i++) lines += initialize(i)
          await new Promise<void>((resolve, reject) => child.stdin!.write(lines, (error) => error ? reject(error) : resolve()))
          flushed += PER_CHUNK
        }
      })()
      writing.catch(() => {})
      await settled(() => flushed, PIPED, 'the pipe took every request or stopped taking them')
      // What the server read (≈ MAX_QUEUED_OUTPUT_BYTES of answers, some 4,000) plus what the pipe and stream buffers hold.
      expect(flushed, `requests the pipe took while stdout was not read (stderr: ${stderr.slice(-500)})`).to.be.below(PIPED / 2)
      const [, answered] = await Promise.all([writing, readAnswers(child.stdout!, PIPED, 1)])
      expect(answered).to.equal(PIPED)
      child.stdin!.end()
      expect(await exited).to.equal(0)
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('maxRequestsInFlight 4: a fifth request while four prompts run is refused TOO_MANY_REQUESTS; once they end, requests are answered again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'serve-acp-flood-'))
    try {
      const toServer = new TransformStream<Uint8Array, Uint8Array>()
      const toClient = new TransformStream<Uint8Array, Uint8Array>()
      let calls = 0
      let release!: () => void
      const released = new Promise<void>((resolve) => { release = resolve })
      ctx = await app({ maxRequestsInFlight: 4 }, toServer.readable, toClient.writable, async () => {
        calls++
        await released
        return 'done'
      })
      const connection = sdk.client({ name: 'spec' }).connect(sdk.ndJsonStream(toServer.writable, toClient.readable))
      const agent = connection.agent
      await agent.request(sdk.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} })
      const sessions = []
      for (let i = 0; i < 5; i++) {
        sessions.push((await agent.request(sdk.methods.agent.session.new, { cwd: dir, mcpServers: [] })).sessionId)
      }
      const prompt = (sessionId: string) => agent.request(sdk.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'wait' }] })
      const running = sessions.slice(0, 4).map(prompt)
      await eventually(() => calls === 4, 'four turns are running')
      const fifth = prompt(sessions[4])
      const listed = await refusal(agent.request(sdk.methods.agent.session.list, {}))
      expect(listed.data).to.deep.include({ code: 'TOO_MANY_REQUESTS' })
      expect(listed.message).to.match(/4 requests .*maxRequestsInFlight/)
      release()
      const answers = await Promise.allSettled([...running, fifth])
      expect(answers.slice(0, 4).map((answer) => answer.status === 'fulfilled' && answer.value.stopReason)).to.deep.equal(Array(4).fill('end_turn'))
      expect(answers[4].status).to.equal('rejected')
      expect(((answers[4] as PromiseRejectedResult).reason as sdk.RequestError).data).to.deep.include({ code: 'TOO_MANY_REQUESTS' })
      expect((await agent.request(sdk.methods.agent.session.list, {})).sessions).to.have.length(5)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
