// The SSRF guard's address rule, on literal addresses (no DNS): IPv6 ranges that carry or reach an IPv4 address are
// refused like the private IPv4 ranges; public addresses pass.
import { expect } from 'chai'
import { ServerCallContext } from '@a2a-js/sdk/server'
import { pinTarget } from '../src/push-target.js'
import { TaskBuses } from '../src/task-buses.js'

const policy = { allowHosts: new Set<string>(), allowHttp: true }
const url = (address: string) => `http://${address.includes(':') ? `[${address}]` : address}/hook`

describe('serve-a2a: the push target guard and the task buses', () => {
  it('refuses NAT64 (well-known and local-use), SIIT, 6to4, Teredo, site-local and discard-only IPv6; lets public addresses through', async () => {
    const refused = ['64:ff9b::a00:1', '64:ff9b:1::a00:1', '::ffff:0:7f00:1', '2002:7f00:1::', '2001:0:4136:e378:8000:63bf:3fff:fdd2', 'fec0::1', '100::1']
    for (const address of refused) {
      const error = await pinTarget(url(address), policy).then(() => undefined, (error: Error & { code?: string }) => error)
      expect(error?.code, address).to.equal('PUSH_TARGET_REFUSED')
    }
    for (const address of ['2606:4700:4700::1111', '1.1.1.1']) expect((await pinTarget(url(address), policy)).address).to.equal(address)
  })

  it('task buses: one per task and caller, and nothing kept for a tenant or caller once its tasks are cleaned up', () => {
    const buses = new TaskBuses()
    const contexts = Array.from({ length: 100 }, (_, i) => new ServerCallContext({ tenant: `tenant-${i}`, user: { isAuthenticated: true, userName: `u${i % 3}` } }))
    for (const context of contexts) expect(buses.createOrGetByTaskId('task', context)).to.equal(buses.createOrGetByTaskId('task', context))
    expect(buses.getByTaskId('task', contexts[0])).to.not.equal(buses.getByTaskId('task', contexts[1]))
    expect(buses.getByTaskId('task', new ServerCallContext({ tenant: 'tenant-0', user: { isAuthenticated: true, userName: 'other' } }))).to.equal(undefined)
    expect(buses.size).to.equal(100)
    for (const context of contexts) buses.cleanupByTaskId('task', context)
    expect(buses.size).to.equal(0)
    expect(buses.getByTaskId('task')).to.equal(undefined)
  })
})
