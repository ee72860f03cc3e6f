/// <reference types="mocha" />
import { getEventListeners } from 'node:events'
import { expect } from 'chai'
import {
  MAX_DIAGNOSTIC_BYTES, SubagentError, TRUNCATION_MARK, type SubagentResult,
} from '@cordis-subagents/subagents-service'
import {
  type Harness, FakeProvider, deferred, isSettled, providerPlugin, rejection, request, setup, tick,
} from './helpers.js'

const bytes = (text: string) => Buffer.byteLength(text, 'utf8')

describe('the run wrapper', () => {
  let h: Harness
  let provider: FakeProvider

  beforeEach(async () => {
    h = await setup()
    provider = new FakeProvider('alpha')
    h.ctx.subagents.register(provider)
  })
  afterEach(async () => { await h.stop() })

  describe('result', () => {
    it('passes a completed result through, with usage and durationMs', async () => {
      const run = await h.ctx.subagents.delegate('alpha', request(h.root))
      provider.last.complete('the answer', { usage: { inputTokens: 10, outputTokens: 5 } })
      const result = await run.result
      expect(result).to.deep.include({
        stopReason: 'completed', output: 'the answer', usage: { inputTokens: 10, outputTokens: 5 },
      })
      expect(result).to.not.have.property('diagnostic')
      expect(result.durationMs).to.be.a('number').and.at.least(0)
      await run.dispose()
    })

    for (const stopReason of ['aborted', 'error', 'max-tokens', 'refusal'] as const) {
      it(`passes stop reason "${stopReason}" with its partial output and diagnostic`, async () => {
        const run = await h.ctx.subagents.delegate('alpha', request(h.root))
        provider.last.outcome.resolve({ stopReason, output: 'partial', diagnostic: 'why' })
        expect(await run.result).to.deep.include({ stopReason, output: 'partial', diagnostic: 'why' })
        await run.dispose()
      })
    }

    it('a rejected provider result → stopReason error with a diagnostic; never rejects', async () => {
      const run = await h.ctx.subagents.delegate('alpha', request(h.root))
      provider.last.outcome.reject(new Error('socket closed'))
      const result = await run.result
      expect(result.stopReason).to.equal('error')
      expect(result.output).to.equal('')
      expect(result.diagnostic).to.include('alpha').and.include('socket closed')
      await run.dispose()
    })

    it('a non-Error rejection (even an unprintable one) still becomes an error result', async () => {
      const run = await h.ctx.subagents.delegate('alpha', request(h.root))
      provider.last.outcome.reject({ toString() { throw new Error('no') } })
      const result = await run.result
      expect(result.stopReason).to.equal('error')
      expect(result.diagnostic).to.be.a('string')
      await run.dispose()
    })

    it('an unknown stop reason → error, naming it and keeping the provider diagnostic and output', async () => {
      const run = await h.ctx.subagents.delegate('alpha', request(h.root))
      provider.last.outcome.resolve({ stopReason: 'max-turns' as any, output: 'half', diagnostic: 'hit 25 turns' })
      const result = await run.result
      expect(result.stopReason).to.equal('error')
      expect(result.output).to.equal('half')
      expect(result.diagnostic).to.include('"max-turns"').and.include('hit 25 turns')
      await run.dispose()
    })

    const malformed: [string, unknown][] = [
      ['undefined', undefined],
      ['null', null],
      ['a string', 'done'],
      ['a result without output', { stopReason: 'completed' }],
      ['a result with numeric output', { stopReason: 'completed', output: 42 }],
    ]
    for (const [label, value] of malformed) {
      it(`a result of ${label} → error with a diagnostic`, async () => {
        const run = await h.ctx.subagents.delegate('alpha', request(h.root))
        provider.last.outcome.resolve(value as SubagentResult)
        const result = await run.result
        expect(result.stopReason).to.equal('error')
        expect(result.output).to.equal('')
        expect(result.diagnostic).to.include('alpha')
        await run.dispose()
      })
    }

    it('caps the diagnostic at 4 KiB (UTF-8 bytes), cut on a character boundary and marked', async () => {
      const run = await h.ctx.subagents.delegate('alpha', request(h.root))
      const long = `${'é'.repeat(3000)}😀${'x'.repeat(5000)}`
      provider.last.outcome.resolve({ stopReason: 'error', output: '', diagnostic: long })
      const { diagnostic } = await run.result
      expect(bytes(diagnostic!)).to.be.at.most(MAX_DIAGNOSTIC_BYTES)
      expect(diagnostic!.endsWith(TRUNCATION_MARK)).to.equal(true)
      expect(long.startsWith(diagnostic!.slice(0, -TRUNCATION_MARK.length))).to.equal(true)
      expect(diagnostic).to.not.include('\uFFFD')
      await run.dispose()
    })

    it('caps the diagnostic of a rejected result as well', async () => {
      const run = await h.ctx.subagents.delegate('alpha', request(h.root))
      provider.last.outcome.reject(new Error('x'.repeat(10_000)))
      const { diagnostic } = await run.result
      expect(bytes(diagnostic!)).to.be.at.most(MAX_DIAGNOSTIC_BYTES)
      expect(diagnostic!.endsWith(TRUNCATION_MARK)).to.equal(true)
      await run.dispose()
    })

    it('the result is frozen: a holder or listener cannot rewrite what others see', async () => {
      const run = await h.ctx.subagents.delegate('alpha', request(h.root))
      provider.last.complete('answer')
      const result = await run.result
      expect(Object.isFrozen(result)).to.equal(true)
      expect(Object.isFrozen(run.info)).to.equal(true)
      await run.dispose()
    })
  })

  describe('cancel', () => {
    it('cancel(reason) calls the provider run.cancel once and aborts the provider signal', async () => {
      const run = await h.ctx.subagents.delegate('alpha', request(h.root))
      const scripted = provider.last
      scripted.settleOnCancel = false
      run.cancel('timeout')
      run.cancel('again')
      expect(scripted.cancels).to.deep.equal(['timeout'])
      expect(scripted.request.signal.aborted).to.equal(true)
      scripted.outcome.resolve({ stopReason: 'aborted', output: 'so far' })
      expect(await run.result).to.deep.include({ stopReason: 'aborted', output: 'so far' })
      await run.dispose()
      expect(scripted.cancels).to.have.length(1)
    })

    it('aborting the request signal is the same path: provider cancel once, even with cancel() too', async () => {
      const controller = new AbortController()
      const run = await h.ctx.subagents.delegate('alpha', request(h.root, { signal: controller.signal }))
      const scripted = provider.last
      scripted.settleOnCancel = false
      controller.abort(new Error('parent aborted'))
      run.cancel('also')
      expect(scripted.cancels).to.deep.equal(['parent aborted'])
      expect(scripted.request.signal.aborted).to.equal(true)
      await run.dispose()
      expect(scripted.cancels).to.have.length(1)
      expect((await run.result).stopReason).to.equal('aborted')
    })

    it('cancel after the result settled does not reach the provider', async () => {
      const run = await h.ctx.subagents.delegate('alpha', request(h.root))
      provider.last.complete()
      await run.result
      run.cancel('late')
      expect(provider.last.cancels).to.deep.equal([])
      await run.dispose()
    })

    it('a provider cancel that throws is logged, not thrown at the holder', async () => {
      const run = await h.ctx.subagents.delegate('alpha', request(h.root))
      const scripted = provider.last
      scripted.run.cancel = () => { throw new Error('cancel exploded') }
      expect(() => run.cancel('stop')).to.not.throw()
      expect(h.warnings.join('\n')).to.include('cancel exploded')
      await run.dispose()
    })

    it('leaves no listener on the caller\'s signal once the run ended, was disposed, or start rejected', async () => {
      const controller = new AbortController()
      const { signal } = controller
      const run = await h.ctx.subagents.delegate('alpha', request(h.root, { signal }))
      expect(getEventListeners(signal, 'abort')).to.have.length(1)
      provider.last.complete()
      await run.result
      expect(getEventListeners(signal, 'abort')).to.have.length(0)
      await run.dispose()

      const live = await h.ctx.subagents.delegate('alpha', request(h.root, { signal }))
      provider.last.settleOnDispose = false
      provider.last.settleOnCancel = false
      await live.dispose()
      expect(getEventListeners(signal, 'abort')).to.have.length(0)

      provider.startError = new Error('nope')
      await rejection(h.ctx.subagents.delegate('alpha', request(h.root, { signal })))
      expect(getEventListeners(signal, 'abort')).to.have.length(0)
    })

    it('the request signal listener is removed on dispose (a later abort reaches nobody)', async () => {
      const controller = new AbortController()
      const run = await h.ctx.subagents.delegate('alpha', request(h.root, { signal: controller.signal }))
      provider.last.complete()
      await run.result
      await run.dispose()
      controller.abort()
      expect(provider.last.cancels).to.deep.equal([])
      expect(provider.last.request.signal.aborted).to.equal(false)
    })
  })

  describe('dispose', () => {
    it('is idempotent and awaited: provider dispose called once; every caller waits for it', async () => {
      const run = await h.ctx.subagents.delegate('alpha', request(h.root))
      const scripted = provider.last
      scripted.complete()
      await run.result
      scripted.disposeGate = deferred()
      const first = run.dispose()
      const second = run.dispose()
      expect(first).to.equal(second)
      expect(await isSettled(first)).to.equal(false)
      expect(h.ctx.subagents.runs()).to.have.length(1)
      scripted.disposeGate.resolve()
      await first
      await second
      await run.dispose()
      expect(scripted.disposeCalls).to.equal(1)
      expect(h.ctx.subagents.runs()).to.deep.equal([])
    })

    it('disposing a live run cancels it first; the result settles (aborted) and end fires', async () => {
      const ends: string[] = []
      h.ctx.on('subagent/end', (_, result) => { ends.push(result.stopReason) })
      const run = await h.ctx.subagents.delegate('alpha', request(h.root))
      const scripted = provider.last
      scripted.settleOnCancel = false
      await run.dispose()
      expect(scripted.cancels).to.deep.equal(['The run was disposed.'])
      expect(scripted.disposeCalls).to.equal(1)
      expect((await run.result).stopReason).to.equal('aborted')
      expect(ends).to.deep.equal(['aborted'])
    })

    it('a provider that disposes without ever settling its result: the service settles it', async () => {
      const run = await h.ctx.subagents.delegate('alpha', request(h.root))
      const scripted = provider.last
      scripted.settleOnCancel = false
      scripted.settleOnDispose = false
      await run.dispose()
      const result = await run.result
      expect(result.stopReason).to.equal('aborted')
      expect(result.diagnostic).to.include('without settling')
    })

    it('a failing provider dispose → DISPOSE_FAILED, but the run is still released', async () => {
      await h.stop()
      h = await setup({ maxConcurrentPerParent: 1 })
      provider = new FakeProvider('alpha')
      h.ctx.subagents.register(provider)
      const run = await h.ctx.subagents.delegate('alpha', request(h.root))
      provider.last.complete()
      provider.last.disposeError = new Error('kill failed')
      const error = await rejection(run.dispose())
      expect(error).to.be.instanceOf(SubagentError).with.property('code', 'DISPOSE_FAILED')
      expect(error.message).to.include('kill failed')
      expect(error.cause).to.equal(provider.last.disposeError)
      // Same outcome for every later call, provider dispose not called again.
      expect(await rejection(run.dispose())).to.equal(error)
      expect(provider.last.disposeCalls).to.equal(1)
      expect(h.ctx.subagents.runs()).to.deep.equal([])
      const next = await h.ctx.subagents.delegate('alpha', request(h.root))
      await next.dispose()
    })
  })

  describe('provider removal', () => {
    it('does not revoke accepted runs: updates, result and dispose still work', async () => {
      const fork = h.ctx.plugin(providerPlugin(new FakeProvider('beta')))
      await h.ctx.lifecycle.flush()
      const beta = h.ctx.subagents.get('beta') as FakeProvider
      const updates: string[] = []
      const run = await h.ctx.subagents.delegate('beta', request(h.root, {
        onUpdate: (update) => updates.push(update.text ?? ''),
      }))
      fork.dispose()
      expect(h.ctx.subagents.get('beta')).to.equal(undefined)
      expect(h.ctx.subagents.runs().map((info) => info.runId)).to.deep.equal([run.id])
      beta.last.update('text', 'working')
      beta.last.complete('finished anyway')
      expect((await run.result).output).to.equal('finished anyway')
      expect(updates).to.deep.equal(['working'])
      expect(beta.last.cancels).to.deep.equal([])
      await run.dispose()
      expect(beta.last.disposeCalls).to.equal(1)
    })
  })

  describe('updates', () => {
    it('are forwarded to the caller\'s onUpdate; a throwing onUpdate is logged and never reaches the provider', async () => {
      const seen: string[] = []
      const run = await h.ctx.subagents.delegate('alpha', request(h.root, {
        onUpdate: (update) => {
          seen.push(update.text!)
          if (update.text === 'bad') throw new Error('holder onUpdate broke')
        },
      }))
      expect(() => provider.last.update('text', 'bad')).to.not.throw()
      provider.last.update('text', 'good')
      expect(seen).to.deep.equal(['bad', 'good'])
      expect(h.warnings.join('\n')).to.include('holder onUpdate broke')
      provider.last.complete()
      await run.result
      provider.last.update('text', 'late')
      expect(seen).to.deep.equal(['bad', 'good'])
      await run.dispose()
    })

    it('updates sent during provider start reach onUpdate at once', async () => {
      const seen: string[] = []
      provider.hold = deferred()
      const starting = h.ctx.subagents.delegate('alpha', request(h.root, { onUpdate: (u) => seen.push(u.text!) }))
      await tick()
      provider.calls[0].onUpdate!({ kind: 'status', text: 'booting' })
      expect(seen).to.deep.equal(['booting'])
      provider.hold.resolve()
      const run = await starting
      await run.dispose()
    })
  })
})
