import { expect } from 'chai'
import { retryAfterMs } from '@cordis-subagents/model-openai/testing'

const NOW = Date.parse('Fri, 04 Dec 2026 19:00:00 GMT')
const wait = (headers: Record<string, string>) => retryAfterMs(new Headers(headers), NOW)

describe('model-openai: the wait a 429/503 announces (retry-after-ms, Retry-After)', () => {
  it('Retry-After in seconds; retry-after-ms (OpenAI\'s) wins over it', () => {
    expect(wait({ 'retry-after': '2' })).to.equal(2000)
    expect(wait({ 'retry-after': '0' })).to.equal(0)
    expect(wait({ 'retry-after-ms': '150.5', 'retry-after': '2' })).to.equal(151)
  })

  it('Retry-After as an HTTP date: the time until it, 0 once it has passed', () => {
    expect(wait({ 'retry-after': 'Fri, 04 Dec 2026 19:00:07 GMT' })).to.equal(7000)
    expect(wait({ 'retry-after': 'Fri, 04 Dec 2026 18:59:00 GMT' })).to.equal(0)
  })

  it('none, or none readable: undefined (the gate backs off exponentially)', () => {
    expect(wait({})).to.equal(undefined)
    expect(retryAfterMs(undefined)).to.equal(undefined)
    for (const value of ['soon', '-5', '1e3', '2.5', '2026-12-04T19:00:07Z', 'Someday, never']) {
      expect(wait({ 'retry-after': value }), value).to.equal(undefined)
    }
    expect(wait({ 'retry-after-ms': 'abc' })).to.equal(undefined)
  })

  it('is bounded: a wait past the timer ceiling is the ceiling, and a long header is not read past its head', () => {
    expect(wait({ 'retry-after': '99999999999' })).to.equal(2_147_483_647)
    expect(wait({ 'retry-after': '1'.repeat(10_000) })).to.equal(2_147_483_647) // its first 64 digits, read as a number, capped
    expect(wait({ 'retry-after': `Fri, 04 Dec 2026 19:00:07 GMT${' '.repeat(100)}x` })).to.equal(7000) // the head is the date
  })
})
