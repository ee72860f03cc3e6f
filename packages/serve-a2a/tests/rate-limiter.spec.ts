/// <reference types="mocha" />
// The per-credential rate limit (rateLimit) measures its minute on the monotonic clock: a step of the wall clock (an NTP
// correction, a VM resumed, `date -s`) neither gives a spent minute back early nor refuses a credential long after it.
import { expect } from 'chai'
import { withClocks } from '@cordis-subagents/test-support'
import { RateLimiter } from '../src/guards.js'

describe('serve-a2a: the rate limit across wall-clock steps', () => {
  it('a credential refused this minute stays refused when the wall clock steps forward 1 h', async () => {
    await withClocks(({ step }) => {
      const limiter = new RateLimiter(2)
      expect([limiter.take('c'), limiter.take('c'), limiter.take('c')]).to.deep.equal([true, true, false])
      step(3_600_000)
      expect(limiter.take('c'), 'the minute is not over').to.equal(false)
    })
  })

  it('a credential refused before the wall clock stepped back 1 h is admitted once its minute has passed', async () => {
    await withClocks(({ step, pass }) => {
      const limiter = new RateLimiter(2)
      expect([limiter.take('c'), limiter.take('c'), limiter.take('c')]).to.deep.equal([true, true, false])
      step(-3_600_000)
      pass(61_000)
      expect(limiter.take('c'), '61 s later').to.equal(true)
      pass(30 * 60_000)
      expect([limiter.take('c'), limiter.take('c'), limiter.take('c')], '31 min later').to.deep.equal([true, true, false])
    })
  })

  it('an injected clock that goes back starts a new window: the limit holds, no credential is locked out', () => {
    let wall = 1_700_000_000_000
    const limiter = new RateLimiter(2, () => wall)
    expect([limiter.take('c'), limiter.take('c'), limiter.take('c')]).to.deep.equal([true, true, false])
    wall -= 3_600_000
    expect([limiter.take('c'), limiter.take('c'), limiter.take('c')]).to.deep.equal([true, true, false])
    wall += 61_000
    expect(limiter.take('c'), '61 s later').to.equal(true)
  })
})
