// The agent card (and the JWKS that checks it) is read under `cardTimeout`, not `requestTimeout`: when that
// limit cuts the read, the error names `cardTimeout` and its value, so the user knows which key to raise.
// A raw node:http server on 127.0.0.1 that holds its answers. The limits differ by far (500 ms vs 10 min),
// so a message naming requestTimeout, or a load waiting for it, fails (the `within` bounds only catch a hang).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { expect } from 'chai'
import { pool, provider, within } from './helpers.js'
import type { A2aProviderOptions } from '../src/index.js'

const BOUND = 20_000
const LIMITS = { cardTimeout: 500, requestTimeout: 600_000 }

type Handler = (req: IncomingMessage, res: ServerResponse, base: string) => void

describe('provider-a2a: the agent card read is bounded by cardTimeout, and its error says so', function () {
  this.timeout(60_000)
  const closers: Array<() => Promise<void>> = []
  afterEach(async () => {
    await Promise.all(closers.splice(0).map((close) => close()))
  })

  async function serve(handler: Handler): Promise<string> {
    const server = createServer((req, res) => handler(req, res, base))
    server.listen(0, '127.0.0.1')
    await new Promise<void>((resolve) => server.once('listening', () => resolve()))
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    closers.push(() => new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
    }))
    return base
  }

  async function failure(loading: Promise<unknown>): Promise<Error & { code?: string }> {
    const error = await within(loading.then(() => undefined, (e: unknown) => e), BOUND, 'the load')
    expect(error, 'the load must fail').to.be.instanceOf(Error)
    return error as Error & { code?: string }
  }
  const loadError = (url: string, options: Partial<A2aProviderOptions> = {}) => failure(provider(url, { ...LIMITS, ...options }))

  function namesCardTimeout(error: Error) {
    expect(error.message).to.match(/no answer within 500 ms \(cardTimeout\)/)
    expect(error.message, 'what to do: the key to raise, and its value').to.match(/raise `cardTimeout` \(now 500 ms\)/)
    expect(error.message, 'requestTimeout did not apply').to.not.match(/requestTimeout/)
  }

  it('a card that never answers: A2A_CARD_UNREACHABLE naming cardTimeout (500 ms), not requestTimeout', async () => {
    const url = await serve(() => {})
    const error = await loadError(url)
    expect(error.code).to.equal('A2A_CARD_UNREACHABLE')
    expect(error.message).to.match(/^Could not fetch the agent card at http:\/\/127\.0\.0\.1:\d+\/\.well-known\/agent-card\.json: /)
    namesCardTimeout(error)
  })

  it('a card whose body never ends: A2A_CARD_INVALID naming cardTimeout, not requestTimeout', async () => {
    const url = await serve((_req, res) => {
      res.setHeader('content-type', 'application/json')
      res.write('{"name":')
    })
    const error = await loadError(url)
    expect(error.code).to.equal('A2A_CARD_INVALID')
    expect(error.message).to.match(/^Could not read the agent card at .*: /)
    namesCardTimeout(error)
  })

  it('with urls: each endpoint whose card timed out is listed naming cardTimeout', async () => {
    const silent = await serve(() => {})
    const also = await serve(() => {})
    const error = await failure(pool([silent, also], LIMITS))
    expect(error.code).to.equal('A2A_CARD_UNREACHABLE')
    expect(error.message.match(/no answer within 500 ms \(cardTimeout\)/g), error.message).to.have.length(2)
    expect(error.message).to.not.match(/requestTimeout/)
  })

  it('a JWKS (cardJwksUrl) that never answers: A2A_CARD_UNVERIFIED naming cardTimeout, not requestTimeout', async () => {
    const url = await serve((req, res, base) => {
      if (req.url !== '/.well-known/agent-card.json') return
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify({
        name: 'slow keys', description: '', version: '1', capabilities: { streaming: true },
        supportedInterfaces: [{ url: `${base}/rpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
        defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'], skills: [],
      }))
    })
    const error = await loadError(url, { cardJwksUrl: `${url}/jwks.json` })
    expect(error.code).to.equal('A2A_CARD_UNVERIFIED')
    expect(error.message).to.match(/^Could not read the JWKS at http:\/\/127\.0\.0\.1:\d+\/jwks\.json /)
    namesCardTimeout(error)
  })
})
