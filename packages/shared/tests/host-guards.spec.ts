/// <reference types="mocha" />
import { expect } from 'chai'
import {
  bearerToken, bindRefusal, defaultHosts, hostForUrl, hostHeader, isCredentialName, isLoopback, originsOf, sameSecret, urlHost,
} from '@cordis-subagents/shared'

describe('shared host guards', () => {
  it('bindRefusal: loopback always binds; any other address needs a credential and allowRemote (one rule for every door)', () => {
    for (const host of ['127.0.0.1', '::1', '[::1]', 'localhost']) {
      expect(bindRefusal({ host, credential: false, allowRemote: false }), host).to.equal(undefined)
    }
    for (const host of ['0.0.0.0', '::', '192.168.1.2', 'example.com']) {
      expect(bindRefusal({ host, credential: false, allowRemote: true }), host).to.include(`host ${host} is not loopback`).and.include('no credential')
      expect(bindRefusal({ host, credential: true, allowRemote: false }), host).to.include(`host ${host} is not loopback`).and.include('allowRemote: true')
      expect(bindRefusal({ host, credential: true, allowRemote: true }), host).to.equal(undefined)
    }
  })

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

  it('bearerToken: the token of "Bearer <token>" (any case, spaces around), nothing else, and no header longer than the cap', () => {
    expect(bearerToken('Bearer abc', 64)).to.equal('abc')
    expect(bearerToken('bearer   abc  ', 64)).to.equal('abc')
    expect(bearerToken('BEARER abc', 64)).to.equal('abc')
    for (const header of [undefined, '', 'abc', 'Basic abc', 'Bearer', 'Bearer ', 'Bearer a b', 'Bearer\tabc', ' Bearer abc']) {
      expect(bearerToken(header, 64), JSON.stringify(header)).to.equal(undefined)
    }
    const long = 'x'.repeat(100)
    expect(bearerToken(`Bearer ${long}`, 100)).to.equal(long)
    expect(bearerToken(`Bearer ${long}${' '.repeat(10)}`, 90)).to.equal(undefined)
  })

  it('isCredentialName: a name with a credential word in it, any case (the stricter of the two rules it replaces)', () => {
    for (const name of ['Authorization', 'X-Api-Key', 'x-auth-token', 'Cookie', 'X-Session', 'DB_PASSWORD', 'X-Sentry-DSN', 'x-jwt', 'X-Webhook-Url',
      'PRIVATE_KEY', 'X-Signature', 'CLIENT_SECRET', 'pwd']) {
      expect(isCredentialName(name), name).to.equal(true)
    }
    for (const name of ['Content-Type', 'Accept', 'User-Agent', 'X-Request-Id', 'OpenAI-Organization']) expect(isCredentialName(name), name).to.equal(false)
  })
})
