/// <reference types="mocha" />
// What an ACP client can make the host log: a warning of a foreign crossing at each `initialize`, and what the ACP
// SDK reports with raw console.error about the client's junk (responses to requests never sent, invalid messages).
// Both go to serve-acp's logger under one log budget (10 lines a minute per kind, the rest counted and summarised),
// the SDK's text cut to 2,000 characters, never to the host's console. Before, 10,000 initialize made 10,000 warnings,
// and every junk line reached console.error raw and whole (a 1 MiB id, a 1 MiB line).
import { expect } from 'chai'
import { Context, Logger } from 'cordis'
import AgentRuntime, { ScriptedModel } from '@cordis-subagents/agent'
import ToolRegistry from '@cordis-subagents/tools'
import { eventually } from '@cordis-subagents/test-support'
import * as ServeAcp from '../src/index.js'

const PER_CHUNK = 100
const MIB = 1 << 20
/** How long one logged line may be: the SDK's text is cut to 2,000 characters, plus its label. */
const CUT = 2_100
const CROSSING = 'the ACP client named a crossing (initialize _meta) that is not this process\'s SUBAGENT_CROSSING_FOR; '
  + 'no env tool ceiling applies'

interface Seen {
  /** serve-acp's log lines: type and text. */
  lines: Array<{ type: string; content: string }>
  /** What reached the host's console.error / console.warn. */
  printed: string[]
}

/** The client: `lines` written as fast as the server reads them; `answers` counts the server's answers (NDJSON lines). */
function client(lines: string[]) {
  const encoder = new TextEncoder()
  const decoder = new TextDecoder()
  let sent = 0
  let answers = 0
  const input = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= lines.length) return
      controller.enqueue(encoder.encode(lines.slice(sent, sent + PER_CHUNK).join('\n') + '\n'))
      sent += PER_CHUNK
    },
  }, { highWaterMark: 0 })
  const output = new WritableStream<Uint8Array>({
    write(chunk) {
      for (const char of decoder.decode(chunk, { stream: true })) if (char === '\n') answers++
    },
  })
  return { input, output, answers: () => answers }
}

describe('serve-acp: log lines a client can trigger', function () {
  this.timeout(30_000)
  let ctx: Context | undefined
  let seen: Seen
  let restore: () => void
  /** The console.error in place before the plugin was loaded (the spec's recorder). */
  let recorder: typeof console.error

  beforeEach(() => {
    seen = { lines: [], printed: [] }
    const targets = Logger.targets.splice(0, Logger.targets.length, {
      levels: { base: 3 },
      record: (record) => { if (record.name === 'serve-acp') seen.lines.push({ type: record.type, content: record.content }) },
    })
    const saved = { error: console.error, warn: console.warn }
    recorder = console.error = (...args: unknown[]) => { seen.printed.push(args.map(String).join(' ').slice(0, 200)) }
    console.warn = console.error
    restore = () => {
      Object.assign(console, saved)
      Logger.targets.splice(0, Logger.targets.length, ...targets)
    }
  })

  afterEach(async () => {
    await ctx?.stop()
    ctx = undefined
    restore()
  })

  /** serve-acp on the client's streams, over an app whose scripted model answers `hi`. */
  async function serve(streams: { input: ReadableStream<Uint8Array>; output: WritableStream<Uint8Array> }) {
    ctx = new Context()
    ctx.plugin(ToolRegistry)
    ctx.plugin(AgentRuntime, { model: 'scripted' })
    const model = new ScriptedModel(async () => ScriptedModel.text('hi'))
    ctx.plugin({ name: 'model', inject: ['agents'], apply: (c: Context) => { c.agents.registerModel('scripted', model) } })
    await ctx.start()
    ctx.plugin(ServeAcp, { transport: streams, loadSession: false } as never)
    await ctx.lifecycle.flush()
  }

  it('10,000 initialize naming a foreign crossing: 10 warnings, then one summary line of the rest', async () => {
    const meta = { cordisSubagents: { crossingFor: 'not-our-crossing-0123456789' } }
    const params = { protocolVersion: 1, clientCapabilities: {}, _meta: meta }
    const initialize = (id: number) => JSON.stringify({ jsonrpc: '2.0', id, method: 'initialize', params })
    const streams = client(Array.from({ length: 10_000 }, (_, id) => initialize(id)))
    await serve(streams)
    await eventually(() => streams.answers() === 10_000, 'every initialize answered', { timeout: 20_000 })
    // The plugin's dispose writes what the budget counted.
    await ctx!.stop()
    ctx = undefined
    const warnings = seen.lines.filter((line) => line.content.includes('crossing'))
    expect(warnings.map((line) => line.type)).to.deep.equal(Array(11).fill('warn'))
    expect(warnings.slice(0, 10).map((line) => line.content)).to.deep.equal(Array(10).fill(CROSSING))
    expect(warnings[10].content).to.match(/: 9990 more lines like this were not logged \(log budget: 10 per 60 s\)$/)
  })

  it('2,000 responses to no request, a 1 MiB invalid message and a 1 MiB id: no raw console call, 10 lines cut, one summary', async () => {
    const lines = [
      // No id, no method: the SDK reports "Invalid message" with its keys (one of 1 MiB).
      JSON.stringify({ jsonrpc: '2.0', result: {}, ['K'.repeat(MIB)]: 1 }),
      JSON.stringify({ jsonrpc: '2.0', id: 'Q'.repeat(MIB), result: {} }),
      ...Array.from({ length: 2_000 }, (_, i) => JSON.stringify({ jsonrpc: '2.0', id: 5_000_000 + i, result: {} })),
      // Answered once everything before it was read.
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: 1, clientCapabilities: {} } }),
    ]
    const streams = client(lines)
    await serve(streams)
    await eventually(() => streams.answers() === 1, 'the last initialize answered', { timeout: 20_000 })
    await ctx!.stop()
    ctx = undefined
    // Once the connection is closed, the SDK's console is no longer routed (the spec's recorder is back) and the rest summarised.
    await eventually(() => console.error === recorder, 'console.error given back once the connection closed', { timeout: 10_000 })
    expect(seen.printed, 'raw console.error / console.warn calls').to.deep.equal([])
    const sdk = seen.lines.filter((line) => line.content.includes('ACP SDK'))
    expect(sdk.map((line) => line.type)).to.deep.equal(Array(11).fill('warn'))
    for (const line of sdk) expect(line.content.length, 'a logged line').to.be.at.most(CUT)
    // (The redactor takes `keys: [` for a credential-named parameter and masks its bracket.)
    expect(sdk[0].content).to.match(/^ACP SDK: Invalid message \{ type: 'object', keys: .*'jsonrpc', 'result', 'K{1000,}/)
    expect(sdk[1].content).to.match(/^ACP SDK: Got response to unknown request Q{1000,}/)
    expect(sdk.slice(2, 10).map((line) => line.content)).to.deep.equal(
      Array.from({ length: 8 }, (_, i) => `ACP SDK: Got response to unknown request ${5_000_000 + i}`))
    expect(sdk[10].content).to.equal('serve-acp: ACP SDK: 1992 more lines like this were not logged (log budget: 10 per 60 s)')
  })
})
