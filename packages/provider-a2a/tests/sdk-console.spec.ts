/// <reference types="mocha" />
// What the A2A SDK's client writes on the console about a remote's junk, with a stubbed `fetch` (no server): a remote on the
// HTTP+JSON (REST) binding answering message:stream with one SSE event that is not JSON (1 MiB, a terminal escape and our
// bearer token in it). The SDK's REST transport writes that event whole with console.error, once per stream we open: it
// reached the host's console raw (1 MiB a line, escapes kept, the token not masked). It now goes to the provider's
// warnings: one line, cut to 2,000 characters, scrubbed, under a log budget (10 lines a minute, the rest summarised).
import { readdirSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { expect } from 'chai'
import type { SubagentRun } from '@cordis-subagents/subagents-service'
import { A2A_SDK_CLIENT_PATH } from '../src/sdk-log.js'
import { AGENT_CARD_PATH, type A2aProvider } from '../src/index.js'
import { provider, request, within } from './helpers.js'

const TOKEN = 'secret-bearer-token-0123456789'
/** One SSE event's data: not JSON, 1 MiB, an escape sequence and our token near its start. */
const JUNK = `\u001b[31m\u001b]52;c;QUFB\u0007 ${TOKEN} ` + 'not-json '.repeat(Math.floor(1024 * 1024 / 9))

/**
 * A REST remote as a stubbed `fetch`: its card, and `JUNK` as the one event of every stream; with `later`, a stream first
 * names its task (working) and sends the junk once `later` resolves, and a read of the task finds it completed.
 * `restore()` puts fetch back.
 */
function restRemote(later?: Promise<void>) {
  const original = globalThis.fetch
  let streams = 0
  const task = (state: string) => ({ id: 'task-1', contextId: 'c', status: { state }, artifacts: [] })
  globalThis.fetch = (async (input: string | URL | Request) => {
    const url = new URL(input instanceof Request ? input.url : String(input))
    if (url.pathname === AGENT_CARD_PATH) {
      return new Response(JSON.stringify({
        name: 'rest-junk', description: 'x', version: '1', capabilities: { streaming: true },
        defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'], skills: [],
        supportedInterfaces: [{ url: `${url.origin}/a2a/rest`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' }],
      }), { headers: { 'content-type': 'application/json' } })
    }
    if (!url.pathname.endsWith('/message:stream')) {
      return new Response(JSON.stringify(task('TASK_STATE_COMPLETED')), { headers: { 'content-type': 'application/json' } })
    }
    streams++
    if (!later) return new Response(`data: ${JUNK}\n\n`, { headers: { 'content-type': 'text/event-stream' } })
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(new TextEncoder().encode(`data: ${JSON.stringify({ task: task('TASK_STATE_WORKING') })}\n\n`))
        await later
        controller.enqueue(new TextEncoder().encode(`data: ${JUNK}\n\n`))
        controller.close()
      },
    })
    return new Response(body, { headers: { 'content-type': 'text/event-stream' } })
  }) as typeof fetch
  return { streams: () => streams, restore: () => void (globalThis.fetch = original) }
}

describe('provider-a2a: the A2A SDK client\'s console under a log budget', function () {
  this.timeout(20_000)
  let saved: { error: typeof console.error; warn: typeof console.warn }
  /** What reached the host's console.error / console.warn (cut to 200 characters). */
  let printed: string[]
  /** The provider's warnings. */
  let lines: string[]
  let remote: ReturnType<typeof restRemote>
  let a2a: A2aProvider | undefined

  let junkSent: () => void
  beforeEach(() => {
    saved = { error: console.error, warn: console.warn }
    printed = []
    lines = []
    // The host's console, as it is before the provider loads.
    console.error = (...args: unknown[]) => void printed.push(args.map(String).join(' ').slice(0, 200))
    console.warn = console.error
  })

  afterEach(async () => {
    junkSent?.()
    await a2a?.dispose()
    a2a = undefined
    remote.restore()
    Object.assign(console, saved)
  })

  const load = () => provider('http://127.0.0.1:9021', {
    bearerToken: TOKEN,
    warn: (format, ...args) => void lines.push(format.replace(/%s/g, () => String(args.shift()))),
  })

  /** A start the junk stream fails; a run it started after all is disposed (the test then fails on the missing rejection). */
  const failedStart = (started: Promise<SubagentRun>) =>
    within(started.then((run) => run.dispose().then(() => 'started'), (error: Error) => error.message), 5_000, 'start')

  it('a non-JSON 1 MiB SSE event: no raw console.error, one line of at most 2,000 characters, one line, the token masked', async () => {
    remote = restRemote()
    a2a = await load()
    const outcome = await failedStart(a2a.start(request()))
    expect(outcome).to.match(/did not accept the task/)
    expect(remote.streams()).to.equal(1)
    // Before the fix: one raw console.error of 1 MiB ("Failed to parse SSE event data: \u001b[31m…"), the token in it.
    expect(printed, 'raw console calls').to.deep.equal([])
    expect(lines).to.have.length(1)
    expect(lines[0]).to.match(/^a2a: A2A SDK: Failed to parse SSE event data: /)
    expect(lines[0].length).to.be.at.most('a2a: A2A SDK: '.length + 2_001)
    expect(lines[0]).to.not.match(/[\u0000-\u001f\u007f]/)
    expect(lines[0]).to.include('not-json').and.not.include(TOKEN)
  })

  it('12 streams: 10 lines, and the other 2 summarised once, at the provider\'s dispose; the console is the host\'s between runs', async () => {
    remote = restRemote()
    const before = console.error
    a2a = await load()
    expect(console.error, 'not routed while no run lives').to.equal(before)
    for (let i = 0; i < 12; i++) expect(await failedStart(a2a.start(request()))).to.match(/did not accept the task/)
    expect(printed, 'raw console calls').to.deep.equal([])
    expect(lines).to.have.length(10)
    expect(console.error, 'the host\'s once the last run is gone').to.equal(before)
    await a2a.dispose()
    expect(lines.slice(10)).to.deep.equal(['a2a: A2A SDK: 2 more lines like this were not logged (log budget: 10 per 60 s)'])
    console.error('the host itself')
    expect(printed).to.deep.equal(['the host itself'])
  })

  it('a run outliving its provider\'s dispose: its stream\'s junk is still routed, until the run is disposed', async () => {
    remote = restRemote(new Promise((resolve) => junkSent = resolve))
    const before = console.error
    a2a = await load()
    const run = await within(a2a.start(request()), 5_000, 'start')
    expect(console.error, 'routed while a run lives').to.not.equal(before)
    await a2a.dispose()
    expect(console.error, 'routed while a run lives, past the provider\'s dispose').to.not.equal(before)
    junkSent()
    await within(run.result, 5_000, 'the run\'s result')
    expect(printed, 'raw console calls').to.deep.equal([])
    expect(lines).to.have.length(1)
    expect(lines[0]).to.match(/^a2a: A2A SDK: Failed to parse SSE event data: /)
    await run.dispose()
    expect(console.error, 'the host\'s again once the last run is disposed').to.equal(before)
  })
})

describe('provider-a2a: which console calls are the A2A SDK client\'s', () => {
  const require = createRequire(import.meta.url)
  const sdk = dirname(dirname(require.resolve('@a2a-js/sdk/client')))
  const sdkV03 = dirname(dirname(require.resolve('a2a-sdk-v03/client')))
  /** Every .js / .cjs file under `dir`, as a path and as the `file:` URL an ES module's frame names. */
  const modules = (dir: string) => readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => /\.c?js$/.test(file))
    .flatMap((file) => [join(dir, file), pathToFileURL(join(dir, file)).href])
  const matches = (file: string) => A2A_SDK_CLIENT_PATH.test(file)

  it('every module of both SDKs\' clients (1.x, its 0.3 compat client, the 0.3 SDK), none of their servers\'', () => {
    const clients = [...modules(join(sdk, 'client')), ...modules(join(sdk, 'compat', 'v0_3', 'client')), ...modules(join(sdkV03, 'client'))]
    const servers = [...modules(join(sdk, 'server')), ...modules(join(sdk, 'compat', 'v0_3', 'server')), ...modules(join(sdkV03, 'server'))]
    expect(clients.length).to.be.greaterThan(8)
    expect(servers.length).to.be.greaterThan(8)
    expect(clients.filter((file) => !matches(file))).to.deep.equal([])
    expect(servers.filter(matches)).to.deep.equal([])
    expect(matches('C:\\app\\node_modules\\a2a-sdk-v03\\dist\\client\\index.cjs')).to.equal(true)
  })
})
