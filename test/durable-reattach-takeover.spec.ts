// A re-run with `reattach: true` that takes a stored parked run over after a restart: the old run
// id never runs again (an answer by it is refused naming the run that took the task over), and a
// take-over that fails (the provider's restore rejects, the store cannot record it, the re-run is
// cancelled) leaves the task as it was, parked on its question, for a later re-run or resume.
// Real Contexts, service and checkpoints store on a SQLite file; a counting fixture provider.
import { strict as assert } from 'node:assert'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Agent } from '@cordis-subagents/agent'
import { withoutCallerTracing } from '@cordis-subagents/shared'
import { deferred } from './support/async.js'
import type { Host } from './support/host.js'
import { waitFor } from './support/host-process-wait.js'
import { failure, reattachFixture, reattachHost, reattachRequest } from './support/reattach-fixture.js'

const { tasks, hooks, taskOf, provider: fixture } = reattachFixture()

describe('durable reattach: a take-over by a re-run is committed once, or not at all', function () {
  this.timeout(30_000)
  let dir: string
  const hosts: Host[] = []
  before(() => { dir = mkdtempSync(join(tmpdir(), 'durable-reattach-takeover-')) })
  afterEach(async () => {
    hooks.restore = hooks.answer = undefined
    for (const host of hosts.splice(0)) await host.stop()
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  const host = (file: string) => reattachHost(file, 'reattach-takeover', fixture, hosts)

  const request = reattachRequest

  /** Task `prompt` parked (reattach) on a first host start, then a second start on the same file: its run id, host and lead. */
  async function restarted(prompt: string): Promise<{ runId: string; second: Host; lead: Agent; file: string }> {
    const file = join(dir, `${prompt.replace(/\W+/g, '-')}.db`)
    const first = await host(file)
    const handle = await first.ctx.subagents.delegate('fx', request(prompt, first.ctx.agents.create({ label: 'lead' })))
    assert.equal((await handle.result).stopReason, 'pending')
    await parked(first, handle.id)
    await first.stop()
    const second = await host(file)
    await waitFor(() => second.ctx.subagents.pending().some((run) => run.runId === handle.id), 'the stored parked run listed')
    tasks.delete(prompt)
    return { runId: handle.id, second, lead: second.ctx.agents.create({ label: 'lead' }), file }
  }

  /** Waits until run `runId` is parked in the store with its question pending. */
  async function parked(on: Host, runId: string): Promise<void> {
    const store = on.ctx.checkpoints
    await waitFor(async () => (await store.load(runId))?.state === 'parked'
      && (await store.questions.pending({ runId })).length === 1, `run ${runId} parked in the store, its question pending`)
  }

  /** The task was left as it was (parked, its question pending, listed), and a later re-run takes it over: one child, one answer. */
  async function leftParked(second: Host, lead: Agent, runId: string, prompt: string): Promise<void> {
    const store = second.ctx.checkpoints
    const stored = (await store.load(runId))!
    assert.deepEqual([stored.state, stored.result], ['parked', undefined], 'the stored run as it was')
    assert.equal((await store.questions.pending({ runId })).length, 1, 'its question still pending')
    assert.ok(second.ctx.subagents.pending().some((run) => run.runId === runId), 'pending() still lists the parked run')
    const task = taskOf(prompt)
    assert.deepEqual([task.starts, task.restores, task.live.size], [0, 0, 0], 'no child left of the failed take-over')
    const again = await second.ctx.subagents.delegate('fx', request(prompt, lead))
    assert.equal((await again.result).question?.text, 'Which colour?', 'a later re-run takes the task over, parked on its question')
    assert.equal((await again.resume('red')).output, 'got red')
    assert.deepEqual([task.starts, task.restores, task.answers], [0, 1, ['red']])
    await again.dispose()
  }

  it('an answer by the id of a run taken over is refused NOT_PARKED naming the run that took it, also after a restart', async () => {
    const prompt = 'paint the fence'
    const { runId, second, lead, file } = await restarted(prompt)
    const taken = await second.ctx.subagents.delegate('fx', request(prompt, lead))
    assert.equal((await taken.result).stopReason, 'pending')
    const refused = await failure(second.ctx.subagents.resume(runId, 'blue'))
    assert.equal(refused?.code, 'NOT_PARKED', 'the old run is not restored a second time')
    assert.match(refused.message, new RegExp(`taken over by run ${taken.id}.*resume\\('${taken.id}'`))
    assert.equal(taken.state, 'parked', 'the run that took the task over still waits for the answer')
    assert.deepEqual(second.ctx.subagents.pending().map((run) => run.runId), [taken.id])
    assert.equal((await taken.resume('red')).output, 'got red')
    await taken.dispose()
    const task = taskOf(prompt)
    assert.deepEqual([task.starts, task.restores, task.answers], [0, 1, ['red']])
    await waitFor(async () => (await second.ctx.checkpoints.load(taken.id))?.state === 'settled', 'the new run settled')
    await second.stop()

    const third = await host(file)
    const again = await failure(third.ctx.subagents.resume(runId, 'blue'))
    assert.equal(again?.code, 'NOT_PARKED')
    assert.match(again.message, new RegExp(`taken over by run ${taken.id}`))
    const rerun = await third.ctx.subagents.delegate('fx', request(prompt, third.ctx.agents.create({ label: 'lead' })))
    assert.equal((await rerun.result).output, 'got red', 'a re-run gives the recorded result of the run that took the task over')
    assert.deepEqual([task.starts, task.restores, task.answers], [0, 1, ['red']], 'nothing ran again')
    await rerun.dispose()
  })

  it('a take-over whose restore rejects leaves the task parked on its question, listed, keyed; a later re-run takes it', async () => {
    const prompt = 'paint the shed'
    const { runId, second, lead } = await restarted(prompt)
    hooks.restore = async () => {
      hooks.restore = undefined
      throw new Error('the remote session is gone (as ACP_RESTORE_FAILED)')
    }
    const error = await failure(second.ctx.subagents.delegate('fx', request(prompt, lead)))
    assert.equal(error?.code, 'PROVIDER_START_FAILED')
    await leftParked(second, lead, runId, prompt)
    assert.match(error.message, new RegExp(`Run ${runId}.*could not be restored.*${runId} is parked as it was`))
  })

  it('a take-over the store cannot record (its compare-and-set fails): the restored child is disposed, the task stays parked', async () => {
    const prompt = 'paint the gate'
    const { runId, second, lead } = await restarted(prompt)
    const store = withoutCallerTracing(second.ctx.checkpoints)
    const transition = store.transition.bind(store)
    let failed = 0
    store.transition = async (id, from, to) => {
      // The commit: the old record closed with the fields that say which run continues it.
      if (typeof to === 'object' && !failed++) throw new Error('the database went away')
      return transition(id, from, to)
    }
    const error = await failure(second.ctx.subagents.delegate('fx', request(prompt, lead)))
    assert.equal(error?.code, 'PROVIDER_START_FAILED')
    assert.match(error.message, /take-over could not be recorded.*the database went away/)
    assert.equal(failed, 1)
    assert.deepEqual([taskOf(prompt).restores, taskOf(prompt).live.size], [1, 0], 'restored, then disposed')
    tasks.delete(prompt)
    await leftParked(second, lead, runId, prompt)
  })

  it('a re-run cancelled while its restore runs: the restored child is disposed, the task stays parked', async () => {
    const prompt = 'paint the door'
    const { runId, second, lead } = await restarted(prompt)
    const entered = deferred()
    const open = deferred()
    hooks.restore = async () => { hooks.restore = undefined; entered.resolve(); await open.promise }
    const controller = new AbortController()
    const rerun = second.ctx.subagents.delegate('fx', request(prompt, lead, controller.signal))
    await entered.promise
    controller.abort()
    open.resolve()
    await assert.rejects(rerun, { code: 'ABORTED' })
    await waitFor(() => taskOf(prompt).live.size === 0, 'the restored child disposed')
    tasks.delete(prompt)
    await leftParked(second, lead, runId, prompt)
  })
})
