/// <reference types="mocha" />
// The README's minimal example provider, verbatim, run against the real service.
import { expect } from 'chai'
import type { Context } from 'cordis'
import type { SubagentProvider, SubagentResult } from '@cordis-subagents/subagents-service'
import { type Harness, request, setup } from './helpers.js'

const echo = {
  name: 'provider-echo',
  inject: ['subagents'],
  apply(ctx: Context, config: { name?: string }) {
    const provider: SubagentProvider = {
      name: config.name ?? 'echo',
      description: 'Answers with the task text (a demo).',
      capabilities: { persona: false, toolFilter: false, depthLimit: false },
      inheritsParentContext: false,
      async start(request) {
        let settle!: (result: SubagentResult) => void
        const result = new Promise<SubagentResult>((resolve) => { settle = resolve })
        const timer = setTimeout(() => {
          request.onUpdate?.({ kind: 'text', text: 'echoing' })
          settle({ stopReason: 'completed', output: request.prompt })
        }, 100)
        const stop = (reason = 'cancelled') => {
          clearTimeout(timer)
          settle({ stopReason: 'aborted', output: '', diagnostic: reason }) // no-op once settled
        }
        return {
          id: request.runId,
          childId: `echo-${request.runId}`,
          result,
          cancel: stop,
          async dispose() { stop('disposed') },
        }
      },
    }
    ctx.subagents.register(provider) // removed automatically with this plugin
  },
}

describe('README example provider', () => {
  let h: Harness

  beforeEach(async () => { h = await setup() })
  afterEach(async () => { await h.stop() })

  it('completes with the prompt and reports an update', async () => {
    h.ctx.plugin(echo, {})
    await h.ctx.lifecycle.flush()
    const updates: string[] = []
    const run = await h.ctx.subagents.delegate('echo', request(h.root, { prompt: 'hello', onUpdate: (u) => updates.push(u.text!) }))
    try {
      const { stopReason, output, durationMs } = await run.result
      expect({ stopReason, output }).to.deep.equal({ stopReason: 'completed', output: 'hello' })
      expect(durationMs).to.be.a('number')
      expect(updates).to.deep.equal(['echoing'])
    } finally {
      await run.dispose()
    }
  })

  it('cancels through the request signal and leaves no timer behind', async () => {
    h.ctx.plugin(echo, { name: 'echo2' })
    await h.ctx.lifecycle.flush()
    const controller = new AbortController()
    const run = await h.ctx.subagents.delegate('echo2', request(h.root, { signal: controller.signal }))
    controller.abort()
    expect(await run.result).to.deep.include({ stopReason: 'aborted', output: '' })
    await run.dispose()
  })

  it('a start on a stopped service is NO_PROVIDER', async () => {
    h.ctx.plugin(echo, {})
    await h.ctx.lifecycle.flush()
    const service = h.ctx.subagents
    await h.stop()
    const error = await service.delegate('echo', request(h.root)).catch((e) => e)
    expect(error).to.have.property('code', 'NO_PROVIDER')
  })
})
