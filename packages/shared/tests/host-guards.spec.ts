/// <reference types="mocha" />
import { expect } from 'chai'
import { defaultHosts, hostForUrl, hostHeader, isLoopback, originsOf, sameSecret, urlHost } from '@cordis-subagents/shared'

describe('shared host guards', () => {
  it('isLoopback: 127.0.0.0/8, ::1 and localhost only', () => {
    for (const host of ['127.0.0.1', '127.8.9.10', '::1', '[::1]', 'localhost', 'LOCALHOST']) expect(isLoopback(host), host).to.equal(true)
    for (const host of ['0.0.0.0', '10.0.0.1', '128.0.0.1', '127.example.com', 'localhost.evil.com', '::', '']) expect(isLoopback(host), host).to.equal(false)
  })

  it('the default Host values of a loopback bind are its three loopback names with the port; others only the bind', () => {
    expect(defaultHosts('127.0.0.1', 8080)).to.deep.equal(['127.0.0.1:8080', 'localhost:8080', '[::1]:8080'])
    expect(defaultHosts('192.168.1.5', 80)).to.deep.equal(['192.168.1.5:80'])
    expect(hostHeader('::1', 5)).to.equal('[::1]:5')
    expect(originsOf(['localhost:1'])).to.deep.equal(['http://localhost:1'])
    expect(urlHost(new URL('http://Example.COM:80/x'))).to.equal('example.com')
    expect(hostForUrl('::1')).to.equal('[::1]')
    expect(hostForUrl('127.0.0.1')).to.equal('127.0.0.1')
  })

  it('sameSecret compares whole values, whatever their lengths', () => {
    expect(sameSecret('abc', 'abc')).to.equal(true)
    expect(sameSecret('abc', 'abd')).to.equal(false)
    expect(sameSecret('ab', 'abc')).to.equal(false)
    expect(sameSecret('', 'abc')).to.equal(false)
  })
})
