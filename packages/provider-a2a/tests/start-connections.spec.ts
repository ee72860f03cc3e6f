// The provider's send connections are held by the provider and by every run not yet disposed: a run
// that outlives its provider's load (a reload) keeps them until its own dispose, and they close when
// the last holder lets go. No request is made: the dispatcher is looked at, not used.
import { expect } from 'chai'
import { StartConnections } from '../src/start-connections.js'

const SEND = ['http://127.0.0.1:9/a2a/jsonrpc', { method: 'POST', body: '{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage"}' }] as const

describe('provider-a2a: the send connections outlive the provider while a run holds them', () => {
  it('picks its own dispatcher for sends only', () => {
    const connections = new StartConnections()
    expect(connections.dispatcherFor(...SEND)).to.not.equal(undefined)
    expect(connections.dispatcherFor('http://127.0.0.1:9/a2a/jsonrpc', { method: 'POST', body: '{"method":"GetTask"}' })).to.equal(undefined)
    return connections.close()
  })

  it('closes at the provider\'s close when no run holds them', async () => {
    const connections = new StartConnections()
    const agent = connections.dispatcherFor(...SEND)!
    await connections.close()
    expect(agent.destroyed).to.equal(true)
  })

  it('a run holding them keeps them open past the provider\'s close; its release (once) closes them; no new hold after the close', async () => {
    const connections = new StartConnections()
    const agent = connections.dispatcherFor(...SEND)!
    const first = connections.hold()!
    const second = connections.hold()!
    await first()
    await connections.close()
    expect(agent.destroyed, 'a run still holds them').to.equal(false)
    expect(connections.hold(), 'the provider let go: no new run').to.equal(undefined)
    await connections.close()
    await first()
    expect(agent.destroyed, 'a second release or close counts once').to.equal(false)
    await second()
    expect(agent.destroyed).to.equal(true)
  })
})
