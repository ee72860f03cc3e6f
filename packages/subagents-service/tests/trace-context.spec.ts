/// <reference types="mocha" />
// W3C trace context on delegations: strict validation of request.traceContext (it ends up in a
// child's environment), and `traceDelegations` sources that give a delegation its context.
import { expect } from 'chai'
import { SubagentError } from '@cordis-subagents/subagents-service'
import { FakeProvider, type Harness, rejection, request, setup } from './helpers.js'

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'

describe('ctx.subagents: trace context', () => {
  let h: Harness
  let provider: FakeProvider

  beforeEach(async () => {
    h = await setup()
    provider = new FakeProvider('alpha')
    h.ctx.subagents.register(provider)
  })
  afterEach(async () => { await h.stop() })

  async function delegateWith(extra: Record<string, unknown>) {
    const run = await h.ctx.subagents.delegate('alpha', { ...request(h.root), ...extra })
    provider.last.complete()
    await run.result
    await run.dispose()
    return provider.calls.at(-1)!
  }

  describe('request.traceContext is checked strictly', () => {
    const bad: Array<[string, unknown]> = [
      ['not an object', 'traceparent'],
      ['no traceparent', {}],
      ['uppercase hex', { traceparent: TRACEPARENT.toUpperCase() }],
      ['an all-zero trace id', { traceparent: `00-${'0'.repeat(32)}-00f067aa0ba902b7-01` }],
      ['an all-zero span id', { traceparent: `00-4bf92f3577b34da6a3ce929d0e0e4736-${'0'.repeat(16)}-01` }],
      ['another version', { traceparent: `01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01` }],
      ['a newline smuggled in', { traceparent: `${TRACEPARENT}\nX=1` }],
      ['a megabyte traceparent', { traceparent: TRACEPARENT + 'a'.repeat(1 << 20) }],
      ['a tracestate over 512 characters', { traceparent: TRACEPARENT, tracestate: `k=${'v'.repeat(600)}` }],
      ['33 tracestate members', { traceparent: TRACEPARENT, tracestate: Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(',') }],
      ['a tracestate value with "="', { traceparent: TRACEPARENT, tracestate: 'k=a=b' }],
      ['a tracestate with a control character', { traceparent: TRACEPARENT, tracestate: 'k=a\u0000b' }],
      ['a tracestate key in uppercase', { traceparent: TRACEPARENT, tracestate: 'Key=v' }],
    ]
    for (const [label, traceContext] of bad) {
      it(`INVALID_REQUEST for ${label}; the provider is never called`, async () => {
        const error = await rejection(h.ctx.subagents.delegate('alpha', { ...request(h.root), traceContext } as never))
        expect(error).to.be.instanceOf(SubagentError).with.property('code', 'INVALID_REQUEST')
        expect(error.message).to.include('request.traceContext')
        expect(provider.calls).to.have.length(0)
      })
    }

    it('a valid one (multi-tenant tracestate keys, optional whitespace) reaches the provider as given', async () => {
      const traceContext = { traceparent: TRACEPARENT, tracestate: 'congo=t61rcWkgMzE, tenant@vendor=x y' }
      const sent = await delegateWith({ traceContext })
      expect(sent.traceContext).to.deep.equal(traceContext)
    })

    it('the provider gets a frozen copy of what was checked: a getter or a later change cannot smuggle text in', async () => {
      let reads = 0
      const traceContext = { get traceparent() { return ++reads === 1 ? TRACEPARENT : `${TRACEPARENT}\nLD_PRELOAD=/tmp/evil.so` } }
      const sent = await delegateWith({ traceContext })
      expect(sent.traceContext).to.not.equal(traceContext)
      expect(sent.traceContext).to.deep.equal({ traceparent: TRACEPARENT })
      expect(Object.isFrozen(sent.traceContext)).to.equal(true)
      expect(reads).to.equal(1)
    })

    it('a source\'s context is read once and passed on as a checked copy', async () => {
      let reads = 0
      h.ctx.subagents.traceDelegations(() => ({ get traceparent() { return ++reads === 1 ? TRACEPARENT : 'x\ny' } }))
      const sent = await delegateWith({})
      expect(sent.traceContext).to.deep.equal({ traceparent: TRACEPARENT })
      expect(reads).to.equal(1)
    })

    it('request.toolCallId must be a string', async () => {
      const error = await rejection(h.ctx.subagents.delegate('alpha', { ...request(h.root), toolCallId: 7 } as never))
      expect(error).to.have.property('code', 'INVALID_REQUEST')
    })
  })

  describe('traceDelegations', () => {
    it('a source gives a delegation without a context its context, seeing the provider\'s request', async () => {
      const seen: Array<[string, string, number]> = []
      h.ctx.subagents.traceDelegations((req, name) => {
        seen.push([req.runId, name, req.depth])
        return { traceparent: TRACEPARENT }
      })
      const sent = await delegateWith({})
      expect(sent.traceContext).to.deep.equal({ traceparent: TRACEPARENT })
      expect(seen).to.deep.equal([[sent.runId, 'alpha', 1]])
    })

    it('the request\'s own context wins; the source is not asked', async () => {
      let asked = 0
      h.ctx.subagents.traceDelegations(() => {
        asked++
        return { traceparent: TRACEPARENT }
      })
      const own = { traceparent: '00-11111111111111111111111111111111-2222222222222222-00' }
      const sent = await delegateWith({ traceContext: own })
      expect(sent.traceContext).to.deep.equal(own)
      expect(asked).to.equal(0)
    })

    it('a throwing source and a malformed context are logged and skipped; the next source is used', async () => {
      h.ctx.subagents.traceDelegations(() => { throw new Error('tracer broke') })
      h.ctx.subagents.traceDelegations(() => ({ traceparent: 'garbage' }))
      h.ctx.subagents.traceDelegations(() => ({ traceparent: TRACEPARENT }))
      const sent = await delegateWith({})
      expect(sent.traceContext).to.deep.equal({ traceparent: TRACEPARENT })
      expect(h.warnings.some((line) => line.includes('tracer broke'))).to.equal(true)
      expect(h.warnings.some((line) => line.includes('traceparent'))).to.equal(true)
    })

    it('a source undefined for this delegation leaves it without a context', async () => {
      h.ctx.subagents.traceDelegations(() => undefined)
      const sent = await delegateWith({})
      expect(sent).to.not.have.property('traceContext')
    })

    it('is scoped to the plugin that added it', async () => {
      const fork = h.ctx.plugin({
        name: 'tracer', inject: ['subagents'],
        apply: (ctx) => { ctx.subagents.traceDelegations(() => ({ traceparent: TRACEPARENT })) },
      })
      await h.ctx.lifecycle.flush()
      expect((await delegateWith({})).traceContext).to.deep.equal({ traceparent: TRACEPARENT })
      fork.dispose()
      expect(await delegateWith({})).to.not.have.property('traceContext')
    })

    it('takes a function', () => {
      expect(() => h.ctx.subagents.traceDelegations('x' as never)).to.throw(SubagentError)
    })
  })
})
