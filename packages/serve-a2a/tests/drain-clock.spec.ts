/// <reference types="mocha" />
// A stopping host waits (bounded) for the responses in flight to end before it closes their connections; the bound
// is measured on the monotonic clock, so a step of the wall clock neither cuts the wait short nor stretches it.
// In process: the express app gets a request over a socket that never connects, whose response stays open until
// the spec closes it.
import { Socket } from 'node:net'
import { IncomingMessage, ServerResponse } from 'node:http'
import { expect } from 'chai'
import { eventually, withSteppedClock } from '@cordis-subagents/test-support'
import { createApp, type HttpGuards } from '../src/http.js'
import { RateLimiter, Subscriptions, TaskSlots } from '../src/guards.js'

/** The app's drain, with one response in flight (`end()` closes it). */
async function oneInFlight() {
  const guards: HttpGuards = {
    credentials: { mode: 'none' } as HttpGuards['credentials'],
    hosts: new Set(['a2a.test']),
    origins: new Set(),
    rate: new RateLimiter(600),
    slots: new TaskSlots(1, 1),
    subscriptions: new Subscriptions({ total: 1, perCredential: 1, perTask: 1 }),
    maxBodyBytes: 1024,
    requestHandler: { getAgentCard: async () => ({}) } as unknown as HttpGuards['requestHandler'],
    refused: new Map(),
    stopping: () => false,
  }
  const { app, drained } = await createApp(guards)
  const req = new IncomingMessage(new Socket())
  Object.assign(req, { method: 'GET', url: '/nowhere', headers: { host: 'other.test' } })
  const res = new ServerResponse(req)
  app(req as never, res as never)
  return { drained, end: () => res.emit('close') }
}

/** Whether `promise` has settled, read at any time. */
function settled(promise: Promise<unknown>): () => boolean {
  let done = false
  void promise.finally(() => { done = true })
  return () => done
}

describe('serve-a2a: the stop drain across wall-clock steps', () => {
  it('the wall clock stepping forward 1 h does not end the wait for a response in flight', async () => {
    const { drained, end } = await oneInFlight()
    try {
      await withSteppedClock(async (step) => {
        const done = settled(drained(5_000))
        step(3_600_000)
        await new Promise((resolve) => setTimeout(resolve, 300))
        expect(done(), 'the drain ended with the response still in flight').to.equal(false)
        end()
        await eventually(done, 'the drain ends once the response has')
      })
    } finally {
      end()
    }
  })

  it('the wall clock stepping back 1 h does not stretch the wait past its bound', async () => {
    const { drained, end } = await oneInFlight()
    try {
      await withSteppedClock(async (step) => {
        const done = settled(drained(200))
        step(-3_600_000)
        await eventually(done, 'the drain ends at its bound')
      })
    } finally {
      end()
    }
  })
})
