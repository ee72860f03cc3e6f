/// <reference types="mocha" />
import { expect } from 'chai'
import { SubagentError, type SubagentErrorCode, type SubagentHandle } from '@cordis-subagents/subagents-service'
import { type Harness, FakeProvider, request, setup, tick } from './helpers.js'

/** The code `action` throws with (it must throw a SubagentError). */
function codeOf(action: () => void): SubagentErrorCode {
  try {
    action()
  } catch (error) {
    expect(error).to.be.instanceOf(SubagentError)
    return (error as SubagentError).code
  }
  throw new Error('expected a SubagentError; nothing was thrown')
}

describe('the handle\'s send (steering)', () => {
  let h: Harness
  let steerable: FakeProvider
  let plain: FakeProvider

  beforeEach(async () => {
    h = await setup()
    steerable = new FakeProvider('steerable')
    steerable.steerable = true
    plain = new FakeProvider('plain')
    h.ctx.subagents.register(steerable)
    h.ctx.subagents.register(plain)
  })
  afterEach(async () => { await h.stop() })

  async function delegate(name = 'steerable'): Promise<SubagentHandle> {
    return h.ctx.subagents.delegate(name, request(h.root))
  }

  it('passes a message to a live run\'s send, in order', async () => {
    const run = await delegate()
    run.send('first')
    run.send('second')
    expect(steerable.last.sent).to.deep.equal(['first', 'second'])
    steerable.last.complete()
    await run.result
    await run.dispose()
  })

  it('INVALID_REQUEST for a non-string, empty, blank or over-long message; the provider is not called', async () => {
    const run = await delegate()
    for (const message of [undefined, 42, '', '   \n\t', 'x'.repeat((1 << 20) + 1)]) {
      expect(codeOf(() => run.send(message as string)), JSON.stringify(String(message).slice(0, 20))).to.equal('INVALID_REQUEST')
    }
    run.send('x'.repeat(1 << 20))
    expect(steerable.last.sent.map((message) => message.length)).to.deep.equal([1 << 20])
    steerable.last.complete()
    await run.dispose()
  })

  it('STEER_UNSUPPORTED on a run whose provider has no send, naming the provider', async () => {
    const run = await delegate('plain')
    let error: SubagentError | undefined
    try {
      run.send('hello')
    } catch (caught) {
      error = caught as SubagentError
    }
    expect(error?.code).to.equal('STEER_UNSUPPORTED')
    expect(error?.message).to.include('"plain"')
    plain.last.complete()
    await run.dispose()
  })

  it('NOT_RUNNING once the result settled (and after dispose), without calling the provider', async () => {
    const run = await delegate()
    steerable.last.complete('done')
    await run.result
    expect(codeOf(() => run.send('late'))).to.equal('NOT_RUNNING')
    await run.dispose()
    expect(codeOf(() => run.send('after dispose'))).to.equal('NOT_RUNNING')
    expect(steerable.last.sent).to.deep.equal([])
  })

  it('NOT_RUNNING right after cancel, before the provider settled the result', async () => {
    steerable.runDefaults = { settleOnCancel: false }
    const run = await delegate()
    run.cancel('stop')
    expect(codeOf(() => run.send('after cancel'))).to.equal('NOT_RUNNING')
    expect(steerable.last.sent).to.deep.equal([])
    await tick()
    steerable.last.finish({ stopReason: 'aborted' })
    expect((await run.result).stopReason).to.equal('aborted')
    await run.dispose()
  })

  it('NOT_RUNNING (beats STEER_UNSUPPORTED) on an ended run of a provider without send', async () => {
    const run = await delegate('plain')
    plain.last.complete()
    await run.result
    expect(codeOf(() => run.send('late'))).to.equal('NOT_RUNNING')
    await run.dispose()
  })

  it('a SubagentError from the provider passes through with its code; any other error becomes NOT_RUNNING with its text', async () => {
    const run = await delegate()
    steerable.last.sendError = new SubagentError('INVALID_REQUEST', '1024 follow-up messages already wait')
    expect(codeOf(() => run.send('one too many'))).to.equal('INVALID_REQUEST')
    steerable.last.sendError = new Error('the child process is gone')
    let error: SubagentError | undefined
    try {
      run.send('into the void')
    } catch (caught) {
      error = caught as SubagentError
    }
    expect(error?.code).to.equal('NOT_RUNNING')
    expect(error?.message).to.include('the child process is gone')
    steerable.last.complete()
    await run.dispose()
  })
})
