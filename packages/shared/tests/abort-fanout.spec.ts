/// <reference types="mocha" />
import { getEventListeners } from 'node:events'
import { expect } from 'chai'
import { abortWaiters, onAbort } from '@cordis-subagents/shared'

describe('onAbort: many waiters on one signal share one listener', () => {
  it('calls every waiter once on abort, in registration order, through one abort listener', () => {
    const controller = new AbortController()
    const calls: number[] = []
    for (let i = 0; i < 1000; i++) onAbort(controller.signal, () => calls.push(i))
    expect(getEventListeners(controller.signal, 'abort')).to.have.length(1)
    expect(abortWaiters(controller.signal)).to.equal(1000)
    controller.abort()
    expect(calls).to.deep.equal(Array.from({ length: 1000 }, (_, i) => i))
    expect(abortWaiters(controller.signal)).to.equal(0)
  })

  it('a waiter that stopped waiting is not called; stopping twice is harmless', () => {
    const controller = new AbortController()
    const calls: string[] = []
    const stopA = onAbort(controller.signal, () => calls.push('a'))
    onAbort(controller.signal, () => calls.push('b'))
    stopA()
    stopA()
    expect(abortWaiters(controller.signal)).to.equal(1)
    expect(getEventListeners(controller.signal, 'abort')).to.have.length(1)
    controller.abort()
    expect(calls).to.deep.equal(['b'])
  })

  it('the signal\'s listener goes with its last waiter, and comes back with the next one', () => {
    const controller = new AbortController()
    const stops = Array.from({ length: 5 }, () => onAbort(controller.signal, () => {}))
    for (const stop of stops) stop()
    expect(getEventListeners(controller.signal, 'abort')).to.have.length(0)
    let called = 0
    onAbort(controller.signal, () => called++)
    expect(getEventListeners(controller.signal, 'abort')).to.have.length(1)
    controller.abort()
    expect(called).to.equal(1)
  })

  it('an already aborted signal calls the waiter at once and registers nothing', () => {
    const controller = new AbortController()
    controller.abort()
    let called = 0
    const stop = onAbort(controller.signal, () => called++)
    expect(called).to.equal(1)
    expect(abortWaiters(controller.signal)).to.equal(0)
    stop()
  })

  it('a throwing waiter does not stop the others; its error surfaces on the next tick', async () => {
    const controller = new AbortController()
    const calls: string[] = []
    onAbort(controller.signal, () => { throw new Error('waiter failed') })
    onAbort(controller.signal, () => calls.push('second'))
    // Take mocha's handler off for this one error, so it reaches ours only.
    const saved = process.listeners('uncaughtException')
    process.removeAllListeners('uncaughtException')
    try {
      const caught = new Promise<Error>((resolve) => process.once('uncaughtException', resolve))
      controller.abort()
      expect(calls).to.deep.equal(['second'])
      expect((await caught).message).to.equal('waiter failed')
    } finally {
      process.removeAllListeners('uncaughtException')
      for (const listener of saved) process.on('uncaughtException', listener)
    }
  })
})
