// Which protocol version the provider speaks, from the card the remote advertises: a 0.3 (or 0.2)
// card is spoken to in 0.3's wire format, a 1.0 card in 1.0's, a card offering both in 1.0.
import { expect } from 'chai'
import { startScriptedServer } from './fixtures/scripted-server.js'
import { startScriptedServerV03 } from './fixtures/scripted-server-v03.js'
import { provider, request, within } from './helpers.js'

describe('provider-a2a: the protocol version from the card', function () {
  this.timeout(20_000)
  const closers: Array<() => Promise<void>> = []
  afterEach(async () => {
    await Promise.all(closers.splice(0).map((close) => close()))
  })

  async function delegate(url: string) {
    const remote = await provider(url)
    const handle = await within(remote.start(request({ prompt: 'complete' })), 10_000, 'start')
    const result = await within(handle.result, 10_000, 'result')
    await within(handle.dispose(), 10_000, 'dispose')
    return { remote, result }
  }

  for (const protocolVersion of ['0.3.0', '0.2.5']) {
    it(`an A2A ${protocolVersion} card (a top-level url) is no longer refused: it is spoken to over 0.3's JSON-RPC, metadata included`, async () => {
      const server = await startScriptedServerV03({ streaming: true, protocolVersion })
      closers.push(server.close)
      const { remote, result } = await delegate(server.url)
      expect(remote.protocol).to.equal('0.3')
      expect(result).to.include({ stopReason: 'completed', output: 'the answer' })
      expect(server.sends).to.have.length(1)
      expect(server.sends[0].metadata).to.have.nested.property('cordisSubagents.depth', 1)
    })
  }

  it('a 0.3 card that prefers HTTP+JSON and lists JSON-RPC as an additional interface: JSON-RPC is used', async () => {
    const server = await startScriptedServerV03({
      streaming: true,
      extraCard: (url) => ({ url: `${url}/a2a/rest`, preferredTransport: 'HTTP+JSON', additionalInterfaces: [{ url: `${url}/a2a/jsonrpc`, transport: 'JSONRPC' }] }),
    })
    closers.push(server.close)
    const { remote, result } = await delegate(server.url)
    expect(remote.protocol).to.equal('0.3')
    expect((remote.card as { url: string }).url).to.match(/\/a2a\/jsonrpc$/)
    expect(result).to.include({ stopReason: 'completed', output: 'the answer' })
  })

  it('a card offering both versions is spoken to in 1.0 (the 0.3 endpoint is never called)', async () => {
    const v1 = await startScriptedServer({ streaming: true })
    closers.push(v1.close)
    // A 0.3 server whose card also lists a 1.0 interface (the 1.0 server, followed with allowCrossOrigin).
    const both = await startScriptedServerV03({
      streaming: true,
      extraCard: () => ({ supportedInterfaces: [{ url: `${v1.url}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }] }),
    })
    closers.push(both.close)
    const remote = await provider(both.url, { allowCrossOrigin: true })
    expect(remote.protocol).to.equal('1.0')
    const handle = await within(remote.start(request({ prompt: 'complete' })), 10_000, 'start')
    expect(await within(handle.result, 10_000, 'result')).to.include({ stopReason: 'completed', output: 'the answer' })
    await within(handle.dispose(), 10_000, 'dispose')
    expect(v1.sends).to.have.length(1)
    expect(both.sends).to.have.length(0)
  })

  it('a 1.0 card listing a 0.3 interface among supportedInterfaces, with no usable 1.0 one: 0.3 is used', async () => {
    const server = await startScriptedServerV03({
      streaming: true,
      extraCard: (url) => ({ url: undefined, supportedInterfaces: [{ url: `${url}/grpc`, protocolBinding: 'GRPC', protocolVersion: '1.0' }, { url: `${url}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '0.3' }] }),
    })
    closers.push(server.close)
    const { remote, result } = await delegate(server.url)
    expect(remote.protocol).to.equal('0.3')
    expect(result).to.include({ stopReason: 'completed', output: 'the answer' })
  })
})
