import { expect } from 'chai'
import { ScriptedModel } from '@cordis-subagents/agent'
import { createInProcessProvider } from '@cordis-subagents/provider-spawn'
import type { ProviderStartRequest } from '@cordis-subagents/subagents-service'
import { type Harness, setup } from './helpers.js'

/** The in-process provider used directly, as a third-party host without ctx.subagents would. */
describe('in-process provider, used directly', () => {
  let h: Harness

  beforeEach(async () => {
    h = await setup({ models: { m: new ScriptedModel([{ text: 'child answer' }]) } })
  })
  afterEach(async () => { await h.ctx.stop() })

  function request(overrides: Partial<ProviderStartRequest> = {}): ProviderStartRequest {
    const parent = h.ctx.agents.create({ model: 'm' })
    return { prompt: 'do it', parent, signal: new AbortController().signal, runId: 'r1', depth: parent.depth + 1, ...overrides }
  }

  it('refuses options out of their range when made (INVALID_PROVIDER), as the config schema would: no timer of 0 or 1e15 ms later', () => {
    const bads: Array<{ maxParkedMs?: number; maxSteps?: number }> = [{ maxParkedMs: 0 }, { maxParkedMs: -5 }, { maxParkedMs: 1e15 }]
    bads.push({ maxParkedMs: Number.NaN }, { maxSteps: 0 }, { maxSteps: 1.5 })
    for (const bad of bads) {
      expect(() => createInProcessProvider(h.ctx, { name: 'spawn', inheritsParentContext: false, ...bad }), JSON.stringify(bad))
        .to.throw(/createInProcessProvider \(spawn\): max(ParkedMs|Steps) must be an integer from 1/).with.property('code', 'INVALID_PROVIDER')
    }
    expect(createInProcessProvider(h.ctx, { name: 'spawn', inheritsParentContext: false, maxParkedMs: 60_000, maxSteps: 3 }).name).to.equal('spawn')
  })

  it('maps a child run that cannot start (it rejects) to an error result, never a rejection', async () => {
    const provider = createInProcessProvider(h.ctx, { name: 'spawn', inheritsParentContext: false })
    // A non-string prompt is refused by Agent.run (INVALID_PROMPT); the service would have caught it first.
    const run = await provider.start(request({ prompt: 42 as unknown as string }))
    const result = await run.result
    expect(result.stopReason).to.equal('error')
    expect(result.output).to.equal('')
    expect(result.diagnostic).to.contain('could not run').and.contain('prompt')
    await run.dispose()
  })

  it('a disposed run keeps only what a continue needs: wake, close and send are NOT_RUNNING, a resume ends in an error result', async () => {
    const provider = createInProcessProvider(h.ctx, { name: 'spawn', inheritsParentContext: false })
    const run = await provider.start(request())
    expect((await run.result).output).to.equal('child answer')
    await run.dispose()
    const code = async (call: () => unknown) => { try { await call(); return 'none' } catch (error) { return (error as { code?: string }).code } }
    for (const verb of [() => run.wake!(), () => run.close!(), () => run.send!('more')]) expect(await code(verb)).to.equal('NOT_RUNNING')
    // As a resume of a disposed child always did: the segment's failure is its result, never a rejection.
    expect(await run.resume!('an answer')).to.deep.include({ stopReason: 'error' })
    run.interrupt!()
    run.cancel()
    expect(run.checkpoint!()).to.deep.include({ messages: [{ role: 'user', content: 'do it' }, { role: 'assistant', content: 'child answer' }] })
  })

  it('cancel() ends a running child as aborted with the reason; dispose is idempotent', async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => { release = resolve })
    h.ctx.agents.registerModel('slow', new ScriptedModel(async () => { await gate; return { text: 'late' } }))
    const provider = createInProcessProvider(h.ctx, { name: 'spawn', inheritsParentContext: false })
    const run = await provider.start(request({ agentOptions: { model: 'slow' } }))
    run.cancel('the holder changed its mind')
    const result = await run.result
    expect(result.stopReason).to.equal('aborted')
    expect(result.diagnostic).to.contain('the holder changed its mind')
    release()
    const first = run.dispose()
    expect(run.dispose()).to.equal(first)
    await first
  })

  it('builds progress updates only while wantsUpdates() says someone takes them (and always without it)', async () => {
    h.ctx.agents.registerModel('three', new ScriptedModel([{ text: 'one' }, { text: 'two' }, { text: 'three' }]))
    const provider = createInProcessProvider(h.ctx, { name: 'spawn', inheritsParentContext: false })
    const runOnce = async (wantsUpdates?: () => boolean) => {
      const updates: string[] = []
      const run = await provider.start(request({
        agentOptions: { model: 'three' },
        onUpdate: (update) => { updates.push(update.kind) },
        ...wantsUpdates ? { wantsUpdates } : {},
      }))
      expect((await run.result).stopReason).to.equal('completed')
      await run.dispose()
      return updates
    }
    let asked = 0
    expect(await runOnce(() => { asked++; return false })).to.deep.equal([])
    expect(asked).to.be.greaterThan(0)
    expect(await runOnce(() => true)).to.deep.equal(['step', 'text'])
    expect(await runOnce()).to.deep.equal(['step', 'text'])
  })
})
