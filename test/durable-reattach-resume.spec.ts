// A re-run with `reattach: true` racing `ctx.subagents.resume(runId)` of the same stored parked run
// after a restart (issue: the task ran twice and took two answers). Real Contexts, the real service
// and the real checkpoints store on a SQLite file; the provider is a fixture at the far edge that
// counts, per task, its starts, restores, answers and how many of its children were live at once.
// Each schedule is forced with a gate in the fixture or a spy on the store, never with a timer.
import { strict as assert } from 'node:assert'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Agent } from '@cordis-subagents/agent'
import { withoutCallerTracing } from '@cordis-subagents/shared'
import { deferred, tick } from './support/async.js'
import type { Host } from './support/host.js'
import { waitFor } from './support/host-process-wait.js'
import { failure, reattachFixture, reattachHost, reattachRequest } from './support/reattach-fixture.js'

const { tasks, hooks, taskOf, provider: fixture } = reattachFixture()

describe('durable reattach: a re-run and a resume by run id of the same stored parked run', function () {
  this.timeout(30_000)
  let dir: string
  const hosts: Host[] = []
  before(() => { dir = mkdtempSync(join(tmpdir(), 'durable-reattach-resume-')) })
  afterEach(async () => {
    hooks.restore = hooks.answer = undefined
    for (const host of hosts.splice(0)) await host.stop()
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  const host = (file: string) => reattachHost(file, 'reattach-resume', fixture, hosts)

  const request = reattachRequest

  /** Task `prompt` parked (reattach) on a first host start, then a second start on the same file: its run id, host and lead. */
  async function restarted(prompt: string): Promise<{ runId: string; second: Host; lead: Agent }> {
    const file = join(dir, `${prompt.replace(/\W+/g, '-')}.db`)
    const first = await host(file)
    const handle = await first.ctx.subagents.delegate('fx', request(prompt, first.ctx.agents.create({ label: 'lead' })))
    assert.equal((await handle.result).stopReason, 'pending')
    const store = first.ctx.checkpoints
    await waitFor(async () => (await store.load(handle.id))?.state === 'parked'
      && (await store.questions.pending({ runId: handle.id })).length === 1, 'the task parked in the store')
    await first.stop()
    const second = await host(file)
    await waitFor(() => second.ctx.subagents.pending().some((run) => run.runId === handle.id), 'the stored parked run listed')
    tasks.delete(prompt)
    return { runId: handle.id, second, lead: second.ctx.agents.create({ label: 'lead' }) }
  }

  /** Runs `hook` (once) when `store.load(runId)` has read the run, before its caller gets the record. */
  function onLoad(second: Host, runId: string, hook: () => Promise<void>): void {
    const store = withoutCallerTracing(second.ctx.checkpoints)
    const load = store.load.bind(store)
    let armed = true
    store.load = async (id: string) => {
      const stored = await load(id)
      if (armed && id === runId) {
        armed = false
        await hook()
      }
      return stored
    }
  }

  /** One child of the task ever, never two at once, and the one answer applied once. */
  function once(prompt: string, answer: string): void {
    const task = taskOf(prompt)
    assert.equal(task.starts + task.restores, 1, `one child for the task (starts ${task.starts}, restores ${task.restores})`)
    assert.equal(task.most, 1, 'never two children of the task live at once')
    assert.deepEqual(task.answers, [answer], 'the one answer applied once')
  }

  it('(a) a resume is restoring the run when the re-run looks its key up: the re-run waits and gives its outcome', async () => {
    const prompt = 'paint the fence (a)'
    const { runId, second, lead } = await restarted(prompt)
    const entered = deferred()
    const open = deferred()
    hooks.restore = async () => { hooks.restore = undefined; entered.resolve(); await open.promise }
    const resumed = second.ctx.subagents.resume(runId, 'blue')
    await entered.promise
    const looked = deferred()
    onLoad(second, runId, async () => looked.resolve())
    const rerun = second.ctx.subagents.delegate('fx', request(prompt, lead))
    await looked.promise
    await tick(20)
    open.resolve()
    assert.equal((await resumed).output, 'got blue')
    const handle = await rerun
    const outcome = await handle.result
    assert.equal(outcome.stopReason, 'completed')
    assert.equal(outcome.output, 'got blue', 'the re-run gives the outcome of the resume it waited for')
    once(prompt, 'blue')
    await handle.dispose()
  })

  it('(b) the re-run read the run parked, then a resume took it (parked -> running): one child, one answer', async () => {
    const prompt = 'paint the shed (b)'
    const { runId, second, lead } = await restarted(prompt)
    let resumed: Promise<unknown> | undefined
    onLoad(second, runId, async () => {
      resumed = second.ctx.subagents.resume(runId, 'green').then((outcome) => outcome, (error: unknown) => error)
      await waitFor(async () => (await second.ctx.checkpoints.load(runId))?.state !== 'parked', 'the resume moved the run')
    })
    const handle = await second.ctx.subagents.delegate('fx', request(prompt, lead))
    let outcome = await handle.result
    if (outcome.stopReason === 'pending') outcome = await handle.resume('green')
    assert.equal(outcome.output, 'got green')
    assert.equal((await resumed as { output?: string }).output, 'got green', 'the resume that took the run continued it')
    once(prompt, 'green')
    await handle.dispose()
  })

  it('(c) a resume already answered the question (its turn going on) when the re-run comes: it waits for that answer', async () => {
    const prompt = 'paint the gate (c)'
    const { runId, second, lead } = await restarted(prompt)
    const answering = deferred()
    const open = deferred()
    hooks.answer = async () => { hooks.answer = undefined; answering.resolve(); await open.promise }
    const resumed = second.ctx.subagents.resume(runId, 'red')
    await answering.promise
    await waitFor(async () => (await second.ctx.checkpoints.questions.get(`${runId}:colour`))?.state === 'answered', 'the answer stored')
    const looked = deferred()
    onLoad(second, runId, async () => looked.resolve())
    const rerun = second.ctx.subagents.delegate('fx', request(prompt, lead))
    await looked.promise
    await tick(20)
    open.resolve()
    assert.equal((await resumed).output, 'got red')
    const handle = await rerun
    assert.equal((await handle.result).output, 'got red')
    once(prompt, 'red')
    await handle.dispose()
  })

  it('(d) the re-run is taking the run over: a resume by the old id is refused NOT_PARKED naming the new run', async () => {
    const prompt = 'paint the door (d)'
    const { runId, second, lead } = await restarted(prompt)
    const entered = deferred()
    const open = deferred()
    hooks.restore = async () => { hooks.restore = undefined; entered.resolve(); await open.promise }
    const rerun = second.ctx.subagents.delegate('fx', request(prompt, lead))
    await entered.promise
    const refused = await failure(second.ctx.subagents.resume(runId, 'blue'))
    open.resolve()
    const handle = await rerun
    assert.equal(refused?.code, 'NOT_PARKED')
    assert.match(refused.message, new RegExp(`taken over by run ${handle.id}`))
    assert.equal((await handle.result).stopReason, 'pending')
    assert.equal((await handle.resume('yellow')).output, 'got yellow')
    once(prompt, 'yellow')
    await handle.dispose()
  })

  it('(e) another start of this host took the run between the look-up and the take-over: the re-run is refused, no child', async () => {
    const prompt = 'paint the roof (e)'
    const { runId, second, lead } = await restarted(prompt)
    // Another start of this host on a shared database: its resume's compare-and-set (parked -> running) lands first.
    onLoad(second, runId, async () => {
      assert.ok(await second.ctx.checkpoints.transition(runId, 'parked', 'running'))
    })
    const error = await failure(second.ctx.subagents.delegate('fx', request(prompt, lead)))
    assert.equal(error?.code, 'NOT_PARKED', 'the re-run is refused rather than running the task a second time')
    assert.match(error.message, /another start of this host/)
    const task = taskOf(prompt)
    assert.deepEqual([task.starts, task.restores], [0, 0])
    assert.equal((await second.ctx.checkpoints.load(runId))!.state, 'running', 'the record stays as the other start set it')
  })
})
