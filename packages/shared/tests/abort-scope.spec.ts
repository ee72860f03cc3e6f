/// <reference types="mocha" />
import { getEventListeners } from 'node:events'
import { expect } from 'chai'
import { abortWaiters, isAbortScope, LazyAbort, listenForAbort, onAbort, withScopeSignal } from '@cordis-subagents/shared'
import { signalsMadeDuring } from '@cordis-subagents/test-support'

describe('LazyAbort: an abort that makes no AbortSignal until one is read', () => {
  it('waiters are called once, in the order they came, and none after they stopped waiting; stopping twice is harmless', () => {
    const scope = new LazyAbort()
    const calls: string[] = []
    const stopA = scope.onAbort(() => calls.push('a'))
    scope.onAbort(() => calls.push('b'))
    const stopC = scope.onAbort(() => calls.push('c'))
    stopA()
    stopA()
    stopC()
    scope.onAbort(() => calls.push('d'))
    scope.abort('why')
    scope.abort('again')
    expect(calls).to.deep.equal(['b', 'd'])
    expect(scope.aborted).to.equal(true)
    expect(scope.reason).to.equal('why')
  })

  it('a waiter another one stops during the abort is not called (as a listener removed during a dispatch is not)', () => {
    const scope = new LazyAbort()
    const calls: string[] = []
    let stopC = () => {}
    scope.onAbort(() => { calls.push('a'); stopC() })
    scope.onAbort(() => calls.push('b'))
    stopC = scope.onAbort(() => calls.push('c'))
    scope.abort()
    expect(calls).to.deep.equal(['a', 'b'])
  })

  it('a waiter that comes after the abort is called at once; the reason of an abort without one is an AbortError', () => {
    const scope = new LazyAbort()
    scope.abort()
    expect(scope.reason).to.be.instanceOf(DOMException)
    expect((scope.reason as DOMException).name).to.equal('AbortError')
    let called = 0
    const stop = scope.onAbort(() => called++)
    expect(called).to.equal(1)
    stop()
  })

  it('waits and aborts without making an AbortSignal; `signal` is made on first read and aborts with the scope', async () => {
    const scope = new LazyAbort()
    expect(await signalsMadeDuring(() => {
      const stop = scope.onAbort(() => {})
      stop()
      scope.onAbort(() => {})
      expect(scope.aborted).to.equal(false)
    })).to.equal(0)
    const signal = scope.signal
    expect(scope.signal).to.equal(signal)
    const heard: unknown[] = []
    signal.addEventListener('abort', () => heard.push(signal.reason))
    scope.abort('stop now')
    expect(heard).to.deep.equal(['stop now'])
  })

  it('a signal first read after the abort is already aborted, with the reason', () => {
    const scope = new LazyAbort()
    scope.abort(new Error('limit'))
    expect(scope.signal.aborted).to.equal(true)
    expect((scope.signal.reason as Error).message).to.equal('limit')
  })
})

describe('listenForAbort: one wait on an AbortSignal or an AbortScope', () => {
  it('on a signal: called once on abort; stopped, it leaves no listener and is not called', () => {
    const controller = new AbortController()
    const calls: number[] = []
    const stop = listenForAbort(controller.signal, () => calls.push(1))
    expect(getEventListeners(controller.signal, 'abort')).to.have.length(1)
    stop()
    stop()
    expect(getEventListeners(controller.signal, 'abort')).to.have.length(0)
    controller.abort()
    expect(calls).to.deep.equal([])
    const other = new AbortController()
    listenForAbort(other.signal, () => calls.push(2))
    other.abort()
    other.abort()
    expect(calls).to.deep.equal([2])
  })

  it('on an aborted signal or scope: called at once', () => {
    const calls: string[] = []
    listenForAbort(AbortSignal.abort(), () => calls.push('signal'))
    const scope = new LazyAbort()
    scope.abort()
    listenForAbort(scope, () => calls.push('scope'))
    expect(calls).to.deep.equal(['signal', 'scope'])
  })

  it('on a scope: waits through the scope, making no signal', async () => {
    const scope = new LazyAbort()
    const calls: string[] = []
    expect(await signalsMadeDuring(() => {
      listenForAbort(scope, () => calls.push('aborted'))
      scope.abort()
    })).to.equal(0)
    expect(calls).to.deep.equal(['aborted'])
  })
})

describe('onAbort (the fan-out) on a scope', () => {
  it('waits through the scope\'s own waiters, making no signal; stopped, it is not called', async () => {
    const scope = new LazyAbort()
    const calls: string[] = []
    expect(await signalsMadeDuring(() => {
      const stopA = onAbort(scope, () => calls.push('a'))
      onAbort(scope, () => calls.push('b'))
      stopA()
      scope.abort('done')
    })).to.equal(0)
    expect(calls).to.deep.equal(['b'])
    expect(abortWaiters(scope.signal)).to.equal(0)
    let late = 0
    onAbort(scope, () => late++)
    expect(late).to.equal(1)
  })

  it('a signal is still waited on through its one shared listener', () => {
    const controller = new AbortController()
    let called = 0
    onAbort(controller.signal, () => called++)
    expect(abortWaiters(controller.signal)).to.equal(1)
    controller.abort()
    expect(called).to.equal(1)
  })
})

describe('withScopeSignal and isAbortScope', () => {
  it('gives a carrier a `signal` made only when read: an own enumerable key a spread copy carries', async () => {
    const scope = new LazyAbort()
    const request = withScopeSignal({ prompt: 'x', abortScope: scope })
    expect(await signalsMadeDuring(() => { expect(Object.keys(request)).to.deep.equal(['prompt', 'abortScope', 'signal']) })).to.equal(0)
    const copy = { ...request }
    expect(copy.signal).to.equal(scope.signal)
    scope.abort('done')
    expect(request.signal.aborted).to.equal(true)
  })

  it('tells a scope from a signal and from look-alikes', () => {
    expect(isAbortScope(new LazyAbort())).to.equal(true)
    expect(isAbortScope(new AbortController().signal)).to.equal(false)
    expect(isAbortScope({ aborted: false })).to.equal(false)
    expect(isAbortScope(null)).to.equal(false)
  })
})
