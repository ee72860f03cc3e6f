/// <reference types="mocha" />
// shared's killWithHost: on `process` only while something is registered; a signal another listener handles runs no
// kill; `exit` runs every kill once. (A signal nobody else handles re-raises itself: that case ends a process, so it is
// specced where a host process is spawned: mcp's signal-net and provider-acp's safety-net slow specs.)
import { expect } from 'chai'
import { killWithHost } from '@cordis-subagents/shared'

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const
const counts = () => [process.listenerCount('exit'), ...SIGNALS.map((signal) => process.listenerCount(signal))]

describe('shared: killWithHost', () => {
  it('listens on exit and the three signals only while a kill is registered, once however many are', () => {
    const before = counts()
    const first = killWithHost(() => {})
    const second = killWithHost(() => {})
    expect(counts()).to.deep.equal(before.map((count) => count + 1))
    first()
    first()
    expect(counts()).to.deep.equal(before.map((count) => count + 1))
    second()
    expect(counts()).to.deep.equal(before)
  })

  it('a signal another listener handles runs no kill; exit runs each kill once, then lets go', () => {
    const before = process.listeners('exit')
    const ran: string[] = []
    const owner = () => ran.push('owner')
    process.on('SIGHUP', owner)
    const releaseA = killWithHost(() => ran.push('a'))
    killWithHost(() => { throw new Error('one kill failing does not stop the others') })
    killWithHost(() => ran.push('c'))
    try {
      process.emit('SIGHUP', 'SIGHUP')
      expect(ran).to.deep.equal(['owner'])
      const net = process.listeners('exit').filter((listener) => !before.includes(listener))
      expect(net).to.have.length(1)
      ;(net[0] as () => void)()
      expect(ran).to.deep.equal(['owner', 'a', 'c'])
      expect(process.listeners('exit')).to.deep.equal(before)
      releaseA()
      expect(process.listeners('exit')).to.deep.equal(before)
    } finally {
      process.removeListener('SIGHUP', owner)
    }
  })
})
