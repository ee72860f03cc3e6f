// result(runId) of a run that is being continued (a continued run keeps its id): the book still holds the previous
// turn's outcome, but the run has not ended, so the read rejects NOT_ENDED until the new turn ends, then gives the new
// outcome. Before, it gave the previous turn's outcome, and subagent_result's paging could mix two outputs.
import { expect } from 'chai'
import type { SubagentHandle } from '@cordis-subagents/subagents-service'
import { deferred, FakeProvider, type Harness, providerPlugin, rejection, request, setup } from './helpers.js'

describe('ctx.subagents.result(runId) while a continue of the run is starting or running', () => {
  let h: Harness
  let fake: FakeProvider

  beforeEach(async () => {
    h = await setup()
    fake = new FakeProvider('fake')
    fake.parkable = true
    // A continue is a new FakeRun under the same run id, whose turn the test settles.
    fake.onRun = (run) => { run.run.continueWith = (_message, next) => fake.start(next) }
    h.ctx.plugin(providerPlugin(fake))
    await h.ctx.lifecycle.flush()
  })
  afterEach(async () => { await h.stop() })

  async function ended(output: string): Promise<SubagentHandle> {
    const run = await h.ctx.subagents.delegate('fake', request(h.root))
    fake.last.complete(output)
    await run.result
    await run.dispose()
    expect(await h.ctx.subagents.result(run.id)).to.include({ output })
    return run
  }

  it('a continued turn that runs: NOT_ENDED (running) while it runs, then the new turn\'s output', async () => {
    const first = await ended('first turn\'s output')
    const next = await h.ctx.subagents.continue(first.id, 'go on', { parent: h.root })
    expect(next.id).to.equal(first.id)
    const during = await rejection(h.ctx.subagents.result(first.id))
    expect(during).to.include({ code: 'NOT_ENDED' })
    expect(during.message).to.match(/is running.*wait for it/)
    fake.last.complete('second turn\'s output')
    await next.result
    expect(await h.ctx.subagents.result(first.id)).to.include({ stopReason: 'completed', output: 'second turn\'s output' })
    await next.dispose()
    expect(await h.ctx.subagents.result(first.id)).to.include({ output: 'second turn\'s output' })
  })

  it('a continue still starting (its provider has not handed the new turn over): NOT_ENDED, then the new output', async () => {
    const first = await ended('first turn\'s output')
    fake.hold = deferred<void>()
    const continuing = h.ctx.subagents.continue(first.id, 'go on', { parent: h.root })
    const starting = await rejection(h.ctx.subagents.result(first.id))
    expect(starting).to.include({ code: 'NOT_ENDED' })
    expect(starting.message).to.match(/is running \(a continue of it is starting\).*wait for it/)
    fake.hold.resolve()
    const next = await continuing
    expect(await rejection(h.ctx.subagents.result(first.id))).to.include({ code: 'NOT_ENDED' })
    fake.last.complete('second turn\'s output')
    await next.result
    expect(await h.ctx.subagents.result(first.id)).to.include({ output: 'second turn\'s output' })
    await next.dispose()
  })

  it('a continued turn that parks on a question: NOT_ENDED naming resume; once answered, the answer turn\'s output', async () => {
    const first = await ended('first turn\'s output')
    const next = await h.ctx.subagents.continue(first.id, 'go on', { parent: h.root })
    fake.last.ask('Which file?')
    expect((await next.result).stopReason).to.equal('pending')
    const parked = await rejection(h.ctx.subagents.result(first.id))
    expect(parked).to.include({ code: 'NOT_ENDED' })
    expect(parked.message).to.match(/is parked.*resume/)
    const answered = h.ctx.subagents.resume(first.id, 'a.txt')
    fake.last.complete('read a.txt')
    expect(await answered).to.include({ output: 'read a.txt' })
    expect(await h.ctx.subagents.result(first.id)).to.include({ output: 'read a.txt' })
    await next.dispose()
  })

  it('a continue refused at the start leaves the previous outcome readable', async () => {
    const first = await ended('first turn\'s output')
    fake.startError = new Error('no room for it')
    expect(await rejection(h.ctx.subagents.continue(first.id, 'go on', { parent: h.root }))).to.be.an('error')
    expect(await h.ctx.subagents.result(first.id)).to.include({ output: 'first turn\'s output' })
  })
})
