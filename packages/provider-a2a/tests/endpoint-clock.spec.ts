// Endpoint health across a wall-clock step (cards served by a stubbed fetch, no server): the card refresh interval
// and an unhealthy endpoint's backoff are monotonic waits; `retryAt`, shown to observers, is a wall time that follows a step.
import { expect } from 'chai'
import { Redactor } from '@cordis-subagents/shared'
import { withSteppedClock } from '@cordis-subagents/test-support'
import { EndpointPool } from '../src/endpoint-pool.js'

const HOUR = 3_600_000
/** Only ends a wait that would otherwise hang. */
const BOUND = 3_000
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A pool over `count` endpoints whose cards are served while `serving.on`; counts the card reads. */
function stubPool(count: number, waits: { cardRefreshInterval: number; retryDelay: number }) {
  const serving = { on: true, reads: 0 }
  const cardFetch = (async (input: URL | string) => {
    serving.reads++
    if (!serving.on) throw new TypeError('fetch failed')
    const { origin } = new URL(String(input))
    const card = {
      name: 'clock agent', description: '', version: '1.0.0', capabilities: {}, skills: [],
      defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'],
      supportedInterfaces: [{ url: `${origin}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    }
    return new Response(JSON.stringify(card), { headers: { 'content-type': 'application/json' } })
  }) as typeof fetch
  const urls = Array.from({ length: count }, (_, i) => new URL(`http://127.0.0.1:${9000 + i}`))
  const pool = new EndpointPool(urls, {
    check: { allowCrossOrigin: false, allowHttp: true }, cardFetch,
    requestFetch: (() => Promise.reject(new Error('no request is sent here'))) as typeof fetch,
    redactor: new Redactor([]), onHealth: () => {}, ...waits,
  })
  return { pool, serving }
}

/** Asks the pool to read the cards that are due, once its reads settled. */
async function refreshDue(pool: EndpointPool): Promise<void> {
  pool.refreshDue()
  await Promise.all(pool.endpoints.map((endpoint) => endpoint.idle()))
}

/** Calls `refreshDue` until a card was read again (the wait it asked for passed); fails naming `what` after `BOUND`. */
async function readAgain(pool: EndpointPool, serving: { reads: number }, what: string): Promise<void> {
  const before = serving.reads
  const end = performance.now() + BOUND
  while (serving.reads === before) {
    if (performance.now() > end) throw new Error(`${what}: not within ${BOUND} ms`)
    await refreshDue(pool)
    await pause(5)
  }
}

describe('provider-a2a: endpoint health across a wall-clock step', () => {
  it('an unhealthy endpoint is read again after its backoff when the clock steps back', () => withSteppedClock(async (step) => {
    const { pool, serving } = stubPool(1, { cardRefreshInterval: 60_000, retryDelay: 20 })
    serving.on = false
    await pool.load().catch(() => {})
    expect(pool.endpoints[0].healthy).to.equal(false)
    step(-HOUR)
    await readAgain(pool, serving, 'the card read after the backoff')
    await pool.dispose()
  }))

  it('an unhealthy endpoint keeps its backoff when the clock steps forward', () => withSteppedClock(async (step) => {
    const { pool, serving } = stubPool(1, { cardRefreshInterval: 60_000, retryDelay: 60_000 })
    serving.on = false
    await pool.load().catch(() => {})
    step(HOUR)
    await refreshDue(pool)
    expect(serving.reads).to.equal(1)
    await pool.dispose()
  }))

  it('a healthy endpoint\'s card is read again after cardRefreshInterval when the clock steps back', () => withSteppedClock(async (step) => {
    const { pool, serving } = stubPool(1, { cardRefreshInterval: 20, retryDelay: 20 })
    await pool.load()
    step(-HOUR)
    await readAgain(pool, serving, 'the card refresh')
    expect(pool.endpoints[0].healthy).to.equal(true)
    await pool.dispose()
  }))

  it('a healthy endpoint\'s card is not read again early when the clock steps forward', () => withSteppedClock(async (step) => {
    const { pool, serving } = stubPool(1, { cardRefreshInterval: 60_000, retryDelay: 20 })
    await pool.load()
    step(HOUR)
    await refreshDue(pool)
    expect(serving.reads).to.equal(1)
    await pool.dispose()
  }))

  it('unhealthy endpoints are ordered by when their backoff ends, and retryAt follows the step', () => withSteppedClock(async (step) => {
    const { pool } = stubPool(2, { cardRefreshInterval: 60_000, retryDelay: 60_000 })
    await pool.load()
    const [first, second] = pool.endpoints
    first.markDown('first down')
    step(-HOUR)
    second.markDown('second down')
    expect(pool.order().map((endpoint) => endpoint.url.port)).to.deep.equal(['9000', '9001'])
    // The wall time of the retry is within its backoff from now, as the (stepped) wall clock reads now.
    const { retryAt } = first.snapshot()
    expect(retryAt).to.be.at.most(Date.now() + 60_001).and.above(Date.now() - HOUR / 2)
    await pool.dispose()
  }))
})
