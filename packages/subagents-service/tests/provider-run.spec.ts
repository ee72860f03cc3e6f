import { expect } from 'chai'
import type { Agent } from '@cordis-subagents/agent'
import { type ProviderStartRequest, type SubagentResult, type SubagentUpdate, startProviderRun } from '@cordis-subagents/subagents-service'
import { deferred } from './helpers.js'

function request(signal = new AbortController().signal, updates: SubagentUpdate[] = []): ProviderStartRequest {
  return {
    prompt: 'task', parent: { id: 'p', depth: 0 } as Agent, signal, runId: 'run-1', depth: 1,
    onUpdate: (update) => { updates.push(update) },
  }
}

/** Parts whose calls are counted; `work` settles the child's result. */
function parts() {
  const work = deferred<SubagentResult>()
  const calls = { begin: 0, cancel: [] as (string | undefined)[], dispose: 0 }
  return {
    work,
    calls,
    parts: {
      childId: 'child-1',
      begin: () => { calls.begin++; return work.promise },
      cancel: (reason?: string) => { calls.cancel.push(reason) },
      dispose: async () => { calls.dispose++ },
    },
  }
}

describe('startProviderRun (the run helper of the provider kit)', () => {
  it('an already aborted signal rejects ABORTED without calling setup', async () => {
    let setups = 0
    const error = await startProviderRun(request(AbortSignal.abort()), () => { setups++; return parts().parts })
      .then(() => undefined, (e) => e)
    expect(error).to.include({ code: 'ABORTED' })
    expect(setups).to.equal(0)
  })

  it('an abort during setup disposes what setup made, never begins it, then rejects ABORTED', async () => {
    const controller = new AbortController()
    const made = parts()
    const error = await startProviderRun(request(controller.signal), async () => {
      controller.abort()
      return made.parts
    }).then(() => undefined, (e) => e)
    expect(error).to.include({ code: 'ABORTED' })
    expect(made.calls).to.deep.equal({ begin: 0, cancel: [], dispose: 1 })
  })

  it('hands over a run with the runId and childId; a rejecting child becomes an error result', async () => {
    const made = parts()
    const run = await startProviderRun(request(), () => made.parts)
    expect(run).to.include({ id: 'run-1', childId: 'child-1' })
    made.work.reject(new Error('model exploded'))
    const result = await run.result
    expect(result).to.deep.include({ stopReason: 'error', output: '' })
    expect(result.diagnostic).to.contain('model exploded')
  })

  it('cancel reaches the child once, also from the signal, and never after the result settled', async () => {
    const controller = new AbortController()
    const made = parts()
    const run = await startProviderRun(request(controller.signal), () => made.parts)
    run.cancel('first')
    run.cancel('second')
    controller.abort(new Error('signal'))
    expect(made.calls.cancel).to.deep.equal(['first'])

    const other = parts()
    const done = await startProviderRun(request(), () => other.parts)
    other.work.resolve({ stopReason: 'completed', output: 'ok' })
    await done.result
    done.cancel('late')
    expect(other.calls.cancel).to.deep.equal([])
  })

  it('the signal aborting after the hand-over cancels the child with its reason', async () => {
    const controller = new AbortController()
    const made = parts()
    await startProviderRun(request(controller.signal), () => made.parts)
    controller.abort(new Error('the caller gave up'))
    expect(made.calls.cancel).to.deep.equal(['the caller gave up'])
  })

  it('dispose is idempotent, disposes the child once, and settles a result left pending as aborted, once', async () => {
    const made = parts()
    const run = await startProviderRun(request(), () => made.parts)
    const first = run.dispose()
    expect(run.dispose()).to.equal(first)
    await first
    expect(made.calls.dispose).to.equal(1)
    const result = await run.result
    expect(result.stopReason).to.equal('aborted')
    made.work.resolve({ stopReason: 'completed', output: 'too late' })
    await new Promise((resolve) => setImmediate(resolve))
    expect(await run.result).to.equal(result)
  })

  it('drops updates sent after the result settled', async () => {
    const updates: SubagentUpdate[] = []
    const made = parts()
    let send!: (update: SubagentUpdate) => void
    const run = await startProviderRun(request(undefined, updates), ({ update }) => { send = update; return made.parts })
    send({ kind: 'text', text: 'during' })
    made.work.resolve({ stopReason: 'completed', output: 'ok' })
    await run.result
    send({ kind: 'text', text: 'after' })
    expect(updates.map((update) => update.text)).to.deep.equal(['during'])
  })
})
