/// <reference types="mocha" />
import { Session } from 'node:inspector/promises'
import { expect } from 'chai'
import { NO_JOURNAL } from '@cordis-subagents/subagents-service'
import { type Harness, FakeProvider, request, setup } from './helpers.js'

// With no durable store loaded, a plain delegation's road never enters src/durable/: observed with
// V8's own call counts (the inspector's precise coverage) over a real Context without checkpoints.

/** Functions of src/durable/ files that ran (name and count) while `work` ran. */
async function durableCalls(session: Session, work: () => Promise<void>): Promise<string[]> {
  await session.post('Profiler.takePreciseCoverage') // resets the counters
  await work()
  const { result } = await session.post('Profiler.takePreciseCoverage')
  return result
    .filter((script) => /\/subagents-service\/(src|lib)\/durable\//.test(script.url))
    .flatMap((script) => script.functions
      .filter((fn) => fn.ranges[0].count > 0)
      .map((fn) => `${script.url.split('/durable/')[1]} ${fn.functionName || '(top)'} ×${fn.ranges[0].count}`))
}

describe('the road of a plain delegation', () => {
  let h: Harness
  let provider: FakeProvider
  const session = new Session()

  before(async () => {
    session.connect()
    await session.post('Profiler.enable')
    await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false })
  })
  after(async () => {
    await session.post('Profiler.stopPreciseCoverage')
    session.disconnect()
  })
  beforeEach(async () => {
    h = await setup()
    provider = new FakeProvider('alpha')
    h.ctx.subagents.register(provider)
  })
  afterEach(async () => { await h.stop() })

  const delegateOnce = async () => {
    const run = await h.ctx.subagents.delegate('alpha', request(h.root))
    provider.last.complete('the answer')
    expect((await run.result).stopReason).to.equal('completed')
    await run.dispose()
  }

  it('without ctx.checkpoints, never calls into src/durable/', async () => {
    expect(h.ctx.get('checkpoints' as never)).to.equal(undefined)
    expect(await durableCalls(session, delegateOnce)).to.deep.equal([])
  })

  it('the probe sees durable/ once a journal is in place (so the empty list above means something)', async () => {
    h.ctx.subagents.useJournal({ ...NO_JOURNAL })
    const calls = await durableCalls(session, delegateOnce)
    expect(calls.some((call) => call.startsWith('journal.ts'))).to.equal(true)
  })
})
