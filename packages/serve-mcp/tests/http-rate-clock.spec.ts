/// <reference types="mocha" />
// The HTTP front's request limit (maxRequestsPerMinute) counts a minute on the monotonic clock: a step of the wall
// clock (an NTP correction, a VM resumed, `date -s`) neither gives a spent minute back early nor keeps refusing every
// client long after it. In process: the front's admission, never listening; a minute passes without being waited out.
import { expect } from 'chai'
import { withClocks } from '@cordis-subagents/test-support'
import { HttpFront } from '../src/http.js'

/** A front that never listens, admitting 2 requests a minute (`admit()`: one request's turn at the limit). */
function front(): () => boolean {
  const http = new HttpFront({
    host: '127.0.0.1', port: 0, path: '/mcp', token: 'spec-token-0123456789', allowedHosts: [], allowedOrigins: [],
    maxBodyBytes: 1024, bodyTimeout: 1_000, maxConnections: 8, maxSessions: 1, sessionIdleTimeout: 60_000, maxRequestsPerMinute: 2,
    newSession: () => Promise.reject(new Error('no session here')),
  })
  const admission = http as unknown as { admitRate(): boolean }
  return () => admission.admitRate()
}

describe('serve-mcp over HTTP: the request limit across wall-clock steps', () => {
  it('a spent minute is not given back when the wall clock steps forward 1 h', async () => {
    await withClocks(({ step }) => {
      const admit = front()
      expect([admit(), admit(), admit()]).to.deep.equal([true, true, false])
      step(3_600_000)
      expect(admit(), 'the minute is not over').to.equal(false)
    })
  })

  it('after the wall clock stepped back 1 h, requests are admitted again once the minute has passed', async () => {
    await withClocks(({ step, pass }) => {
      const admit = front()
      expect([admit(), admit(), admit()]).to.deep.equal([true, true, false])
      step(-3_600_000)
      pass(61_000)
      expect([admit(), admit(), admit()], '61 s later').to.deep.equal([true, true, false])
      pass(10 * 60_000)
      expect(admit(), '11 min later').to.equal(true)
    })
  })
})
