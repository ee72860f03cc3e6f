// Signed agent cards across the A2A boundary: serve-a2a signs its card (`signing`: JWS over the
// canonical card, A2A 1.0 AgentCardSignature) and provider-a2a checks it against the key its config
// gives (`cardKey`, or `cardJwksUrl`), refusing at start a card that is unsigned, was changed after
// signing, or was signed by another key (A2A_CARD_UNVERIFIED). Real hosts on 127.0.0.1.
import { generateKeyPairSync } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { expect } from 'chai'
import { verifyAgentCardSignature } from '@a2a-js/sdk'
import { Context } from 'cordis'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime, { type Agent, ScriptedModel } from '@cordis-subagents/agent'
import { type A2aError, type A2aProvider, createA2aProvider } from '@cordis-subagents/provider-a2a'
import A2aServer, { type Config as ServeConfig } from '@cordis-subagents/serve-a2a'

const CARD_PATH = '/.well-known/agent-card.json'

function keyPair() {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  return { pem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, jwk: publicKey.export({ format: 'jwk' }) as Record<string, unknown> }
}

describe('signed agent cards: serve-a2a signs, provider-a2a verifies (real hosts on 127.0.0.1)', function () {
  this.timeout(30_000)
  const closers: Array<() => Promise<unknown>> = []
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close()
  })

  async function host(config: Partial<ServeConfig>): Promise<A2aServer> {
    const ctx = new Context()
    ctx.plugin(ToolRegistry)
    ctx.plugin(AgentRuntime, { model: 'scripted' })
    ctx.plugin({
      name: 'fixture',
      inject: ['agents'],
      apply: (ctx: Context) => ctx.agents.registerModel('scripted', new ScriptedModel(() => ScriptedModel.text('signed answer'))),
    })
    ctx.plugin(A2aServer, config)
    await ctx.start()
    await ctx.lifecycle.flush()
    closers.push(() => ctx.stop())
    return ctx.a2aServer
  }

  /** A server on 127.0.0.1 answering `path` with `body` (JSON); its base URL. */
  async function serveJson(path: string, body: () => unknown): Promise<string> {
    const server: Server = createServer((req, res) => {
      if (req.url !== path) return void res.writeHead(404).end()
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body()))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    closers.push(() => new Promise((resolve) => server.close(resolve)))
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  }

  async function refusal(options: Parameters<typeof createA2aProvider>[0]): Promise<A2aError> {
    const outcome = await createA2aProvider(options).then((provider) => provider, (error: A2aError) => error)
    if (!(outcome instanceof Error)) {
      closers.push(() => outcome.dispose())
      expect.fail('the provider started')
    }
    return outcome
  }

  async function answer(remote: A2aProvider): Promise<string | undefined> {
    const parent = { id: 'parent', depth: 0, cwd: process.cwd() } as unknown as Agent
    const run = await remote.start({ prompt: 'hello', parent, signal: new AbortController().signal, runId: 'signed-1', depth: 1, maxDepthCeiling: 3 })
    const result = await run.result
    await run.dispose()
    return result.output
  }

  it('a signed card verifies with the host\'s public key (cardKey) and the run goes through; a provider with no key takes the card as it is', async () => {
    const { pem } = keyPair()
    const ctx = await host({ signing: { key: pem, kid: 'card-1' } })
    const { url, token, cardPublicJwk } = ctx
    expect(cardPublicJwk).to.include({ kid: 'card-1', alg: 'ES256', crv: 'P-256' })
    expect(cardPublicJwk).to.not.have.property('d')
    const card = await (await fetch(`${url}${CARD_PATH}`, { headers: { 'A2A-Version': '1.0' } })).json() as { signatures: unknown[] }
    expect(card.signatures).to.have.length(1)
    const remote = await createA2aProvider({ url, bearerToken: token, cardKey: cardPublicJwk })
    closers.push(() => remote.dispose())
    expect(await answer(remote)).to.equal('signed answer')
    const unchecked = await createA2aProvider({ url, bearerToken: token })
    closers.push(() => unchecked.dispose())
    expect(unchecked.card.name).to.equal(remote.card.name)
  })

  it('a JWKS URL: the key of the signature\'s kid is taken from it', async () => {
    const { pem } = keyPair()
    const ctx = await host({ signing: { key: pem, kid: 'card-2' } })
    const other = { ...keyPair().jwk, kid: 'someone-else' }
    const jwks = await serveJson('/jwks.json', () => ({ keys: [other, ctx.cardPublicJwk] }))
    const remote = await createA2aProvider({ url: ctx.url, bearerToken: ctx.token, cardJwksUrl: `${jwks}/jwks.json` })
    closers.push(() => remote.dispose())
    expect(await answer(remote)).to.equal('signed answer')
    // A JWKS without that kid: refused.
    const without = await serveJson('/jwks.json', () => ({ keys: [other] }))
    const error = await refusal({ url: ctx.url, bearerToken: ctx.token, cardJwksUrl: `${without}/jwks.json` })
    expect(error.code).to.equal('A2A_CARD_UNVERIFIED')
    expect(error.message).to.include('no key with kid "card-2"')
  })

  it('a card changed after signing (its interface moved to another server) is refused: A2A_CARD_UNVERIFIED, nothing sent there', async () => {
    const { pem } = keyPair()
    const ctx = await host({ signing: { key: pem, kid: 'card-3' } })
    const signed = await (await fetch(`${ctx.url}${CARD_PATH}`, { headers: { 'A2A-Version': '1.0' } })).json() as Record<string, any>
    let tampered = ''
    const forged = await serveJson(CARD_PATH, () => ({
      ...signed, supportedInterfaces: signed.supportedInterfaces.map((entry: Record<string, unknown>) => ({ ...entry, url: `${tampered}/a2a/jsonrpc` })),
    }))
    tampered = forged
    const error = await refusal({ url: forged, cardKey: ctx.cardPublicJwk })
    expect(error.code).to.equal('A2A_CARD_UNVERIFIED')
    expect(error.message).to.match(/does not verify with the configured key .*signature verification failed/)
    // The untouched card, served the same way, verifies: the refusal is the change, not the copy.
    const copy = await serveJson(CARD_PATH, () => signed)
    const error2 = await refusal({ url: copy, cardKey: ctx.cardPublicJwk, allowCrossOrigin: false })
    expect(error2.code, error2.message).to.equal('A2A_CARD_INVALID')
    expect(error2.message).to.match(/another origin than the card/)
  })

  it('the signature covers the card as served, security scheme included: the SDK\'s verifier takes it; a swapped scheme is refused', async () => {
    const { pem } = keyPair()
    const ctx = await host({ signing: { key: pem, kid: 'card-5' } })
    const signed = await (await fetch(`${ctx.url}${CARD_PATH}`, { headers: { 'A2A-Version': '1.0' } })).json() as Record<string, any>
    expect(signed.securitySchemes).to.deep.equal({ cordis: { httpAuthSecurityScheme: { scheme: 'Bearer', description: 'A bearer token the operator of this server gave you.' } } })
    await verifyAgentCardSignature(async () => ctx.cardPublicJwk as never)(signed as never)
    // The same card with its scheme changed after signing (a client would send its credential elsewhere).
    const swapped = { ...signed, securitySchemes: { cordis: { apiKeySecurityScheme: { location: 'query', name: 'key' } } } }
    const forged = await serveJson(CARD_PATH, () => swapped)
    const error = await refusal({ url: forged, cardKey: ctx.cardPublicJwk, allowCrossOrigin: false })
    expect(error.code, error.message).to.equal('A2A_CARD_UNVERIFIED')
    // The untouched card served the same way gets past the signature (and stops at the origin check).
    const copy = await serveJson(CARD_PATH, () => signed)
    expect((await refusal({ url: copy, cardKey: ctx.cardPublicJwk, allowCrossOrigin: false })).code).to.equal('A2A_CARD_INVALID')
  })

  it('a card signed by another key, or not signed at all, is refused when a key is configured', async () => {
    const { pem } = keyPair()
    const wrong = keyPair().jwk
    const ctx = await host({ signing: { key: pem, kid: 'card-4' } })
    const error = await refusal({ url: ctx.url, bearerToken: ctx.token, cardKey: wrong })
    expect(error.code).to.equal('A2A_CARD_UNVERIFIED')
    expect(error.message).to.match(/signature verification failed/)
    const unsigned = await host({})
    const error2 = await refusal({ url: unsigned.url, bearerToken: unsigned.token, cardKey: ctx.cardPublicJwk })
    expect(error2.code).to.equal('A2A_CARD_UNVERIFIED')
    expect(error2.message).to.match(/is not signed/)
  })

  it('a bad signing key fails the host\'s load; a bad cardKey fails the provider\'s config', async () => {
    expect(() => new A2aServer(new Context(), { signing: { key: 'not a key', kid: 'k' } })).to.throw(/signing: the key is not a private key/)
    const error = await refusal({ url: 'http://127.0.0.1:9/', cardKey: 'not a key' })
    expect(error.code).to.equal('A2A_INVALID_CONFIG')
  })
})
