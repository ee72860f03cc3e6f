/// <reference types="mocha" />
// The SDK console router: what a third-party SDK writes with raw console.* goes to the sink of the package that registered its
// module path, capped; every other call passes through untouched; the original console comes back with the last registration.
import { inspect } from 'node:util'
import { runInThisContext } from 'node:vm'
import { expect } from 'chai'
import { routeSdkConsole, type SdkConsoleMethod } from '@cordis-subagents/shared'

type Say = (method: SdkConsoleMethod | 'log', ...args: unknown[]) => void

/** A function whose stack frame is a module at `file`, calling console[method]: a stand-in for an SDK's dist file. */
function sdkModule(file: string): Say {
  return runInThisContext('(function say(method, ...args) { console[method](...args) })', { filename: file }) as Say
}

const ACP = sdkModule('/app/node_modules/@agentclientprotocol/sdk/dist/core/jsonrpc.js')
const A2A_CLIENT = sdkModule('/app/node_modules/@a2a-js/sdk/dist/client/index.js')
const A2A_SERVER = sdkModule('/app/node_modules/@a2a-js/sdk/dist/server/index.js')
const METHODS = ['error', 'warn', 'info', 'debug', 'log'] as const

describe('shared: routeSdkConsole (third-party SDKs\' console calls)', () => {
  let saved: Record<string, unknown>
  /** What reached the console methods the router replaced (our stand-ins for the host's console). */
  let printed: string[]
  /** The arguments each of those calls got, as they were. */
  let raw: unknown[][]
  const ends: Array<() => void> = []

  beforeEach(() => {
    saved = Object.fromEntries(METHODS.map((method) => [method, console[method]]))
    printed = []
    raw = []
    for (const method of METHODS) {
      console[method] = (...args: unknown[]) => {
        printed.push(`${method}: ${args.map(String).join(' ')}`)
        raw.push(args)
      }
    }
  })

  afterEach(() => {
    for (const end of ends.splice(0)) end()
    Object.assign(console, saved)
  })

  function route(from: RegExp, methods?: SdkConsoleMethod[], maxChars?: number) {
    const got: string[] = []
    const end = routeSdkConsole({ from, sink: (call) => { got.push(`${call.method}: ${call.text()}`) }, methods, maxChars })
    ends.push(end)
    return { got, end }
  }

  it('two registrations with different paths: each gets its SDK\'s calls; others pass through untouched', () => {
    const client = route(/[\\/]@a2a-js[\\/]sdk[\\/]dist[\\/]client[\\/]/)
    const server = route(/[\\/]@a2a-js[\\/]sdk[\\/]dist[\\/]server[\\/]/)
    A2A_CLIENT('error', 'client says %s', 'hi')
    A2A_SERVER('warn', 'server says', { id: 7 })
    ACP('error', 'Got response to unknown request', 42)
    const ownObject = { mine: true }
    console.error('the host itself', ownObject)
    expect(client.got).to.deep.equal(['error: client says hi'])
    expect(server.got).to.deep.equal(['warn: server says { id: 7 }'])
    expect(printed).to.deep.equal(['error: Got response to unknown request 42', 'error: the host itself [object Object]'])
    expect(raw[1]![1], 'the very arguments').to.equal(ownObject)
  })

  it('routes console.error and console.warn by default; info and debug only when asked; console.log never', () => {
    const acp = route(/[\\/]@agentclientprotocol[\\/]sdk[\\/]/)
    const server = route(/[\\/]@a2a-js[\\/]sdk[\\/]dist[\\/]server[\\/]/, ['error', 'warn', 'info', 'debug'])
    for (const method of METHODS) {
      ACP(method, `acp ${method}`)
      A2A_SERVER(method, `server ${method}`)
    }
    expect(acp.got).to.deep.equal(['error: acp error', 'warn: acp warn'])
    expect(server.got).to.deep.equal(['error: server error', 'warn: server warn', 'info: server info', 'debug: server debug'])
    expect(printed).to.deep.equal(['info: acp info', 'debug: acp debug', 'log: acp log', 'log: server log'])
  })

  it('a call matched by two registrations goes to the first live one', () => {
    const first = route(/@agentclientprotocol/)
    const second = route(/[\\/]sdk[\\/]dist[\\/]/)
    ACP('error', 'one')
    first.end()
    ACP('error', 'two')
    expect([first.got, second.got]).to.deep.equal([['error: one'], ['error: two']])
  })

  it('caps what it formats: string arguments are cut before formatting, an Error is its name and cut message', () => {
    const { got } = route(/@agentclientprotocol/, undefined, 100)
    const huge = 'i'.repeat(4 << 20)
    ACP('error', 'Got response to unknown request', huge)
    ACP('error', 'Invalid message', { type: 'object', keys: [huge, ...Array.from({ length: 1000 }, (_, i) => `k${i}`)] })
    ACP('error', 'router stopped unexpectedly:', new Error(`m${huge}`))
    expect(got.map((text) => text.length)).to.satisfy((lengths: number[]) => lengths.every((n) => n <= 'error: '.length + 101))
    expect(got[0]).to.equal(`error: ${`Got response to unknown request ${huge}`.slice(0, 100)}…`)
    expect(got[2]).to.match(/^error: router stopped unexpectedly: Error: miii+…$/)
    expect(printed).to.deep.equal([])
  })

  it('formats a call only when its sink asks for the text (a budget that only counts the line pays for no formatting)', () => {
    let inspected = 0
    const arg = { [inspect.custom]: () => { inspected++; return 'custom' } }
    const texts: string[] = []
    let ask = false
    ends.push(routeSdkConsole({ from: /@agentclientprotocol/, sink: (call) => { if (ask) texts.push(call.text(), call.text()) } }))
    ACP('error', 'quiet', arg)
    expect(inspected).to.equal(0)
    ask = true
    ACP('error', 'asked', arg)
    expect([inspected, texts]).to.deep.equal([1, ['asked custom', 'asked custom']])
  })

  it('matches the module\'s file as an ESM file: URL too', () => {
    const { got } = route(/[\\/]@agentclientprotocol[\\/]sdk[\\/]/)
    sdkModule('file:///app/node_modules/@agentclientprotocol/sdk/dist/core/jsonrpc.js')('warn', 'from an ES module')
    expect(got).to.deep.equal(['warn: from an ES module'])
  })

  it('restores the original console method when the last registration of it ends (idempotent ends)', () => {
    const original = { error: console.error, info: console.info }
    const a = route(/@agentclientprotocol/)
    const b = route(/@a2a-js/, ['info'])
    const wrapper = console.error
    expect(wrapper).to.not.equal(original.error)
    expect(console.info).to.not.equal(original.info)
    a.end()
    a.end()
    expect(console.error, 'no registration of error is left').to.equal(original.error)
    expect(console.info, 'b still routes info').to.not.equal(original.info)
    b.end()
    expect(console.info).to.equal(original.info)
    const c = route(/@agentclientprotocol/)
    const d = route(/@a2a-js/)
    expect(console.error, 'one wrapper serves every registration').to.not.equal(original.error)
    const shared = console.error
    c.end()
    expect(console.error).to.equal(shared)
    d.end()
    expect(console.error).to.equal(original.error)
  })

  it('a wrapper someone replaced meanwhile is left in place at the end; ours, left in their chain, passes everything on', () => {
    const original = console.error
    const { got, end } = route(/@agentclientprotocol/)
    const ours = console.error
    const theirs = (...args: unknown[]) => { printed.push(`theirs: ${args.join(' ')}`); ours(...args) }
    console.error = theirs
    end()
    expect(console.error, 'their wrapper stays').to.equal(theirs)
    ACP('error', 'late')
    expect(got).to.deep.equal([])
    expect(printed).to.deep.equal(['theirs: late', 'error: late'])
    // A new registration wraps theirs, and routes again.
    const again = route(/@agentclientprotocol/)
    ACP('error', 'routed')
    expect(again.got).to.deep.equal(['error: routed'])
    again.end()
    expect(console.error).to.equal(theirs)
    console.error = original
  })

  it('a throwing sink is not the SDK\'s problem, and what a sink writes to the console passes through', () => {
    ends.push(routeSdkConsole({ from: /@agentclientprotocol/, sink: () => { throw new Error('sink broke') } }))
    expect(() => ACP('error', 'x')).to.not.throw()
    ends.splice(0).forEach((end) => end())
    ends.push(routeSdkConsole({ from: /@agentclientprotocol/, sink: (call) => console.error(`logged: ${call.text()}`) }))
    ACP('error', 'y')
    expect(printed).to.deep.equal(['error: logged: y'])
  })
})
