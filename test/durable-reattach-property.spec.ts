// Property: a re-run with `reattach: true` and `ctx.subagents.resume(runId)` of the same stored
// parked run, after a restart, in any interleaving (which goes first, and how many event-loop turns
// later the other comes) run the task once: never two children of it live at once, one child in
// all (a start or a restore), one answer applied once, both callers get that answer's outcome or
// a NOT_PARKED refusal, and the store ends with the stored run no longer parked.
// Real Contexts, service and checkpoints store on a SQLite file; a counting fixture provider.
// Replay a failure: REATTACH_SEED=<seed> npx mocha test/durable-reattach-property.spec.ts
import { strict as assert } from 'node:assert'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import type { SubagentOutcome } from '@cordis-subagents/subagents-service'
import type { Host } from './support/host.js'
import { waitFor } from './support/host-process-wait.js'
import { reattachFixture, reattachHost, reattachRequest } from './support/reattach-fixture.js'

const RUNS = Number(process.env.REATTACH_RUNS ?? 24)
const SEED = process.env.REATTACH_SEED === undefined ? undefined : Number(process.env.REATTACH_SEED)

const { tasks, taskOf, provider: fixture } = reattachFixture()

const turns = async (n: number) => { for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve)) }

describe('durable reattach: a re-run and a resume by run id, any interleaving (property)', function () {
  this.timeout(120_000)
  let dir: string
  const hosts: Host[] = []
  before(() => { dir = mkdtempSync(join(tmpdir(), 'durable-reattach-property-')) })
  after(async () => {
    for (const host of hosts.splice(0)) await host.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  // Every task parks under one lead: room for all of them.
  const host = (file: string) => reattachHost(file, 'reattach-property', fixture, hosts,
    { maxConcurrentPerParent: 4 * RUNS, maxChildren: 4 * RUNS, maxConcurrent: 4 * RUNS })

  const request = reattachRequest

  it(`one child, one answer, whichever comes first and however late the other (${RUNS} schedules)`, async () => {
    // One parked task per schedule, stored by a first host start; the schedules run on a second start.
    const file = join(dir, 'tasks.db')
    const first = await host(file)
    const lead = first.ctx.agents.create({ label: 'lead' })
    const pool: { prompt: string; runId: string }[] = []
    for (let i = 0; i < RUNS; i++) {
      const prompt = `paint fence ${i}`
      const handle = await first.ctx.subagents.delegate('fx', request(prompt, lead))
      assert.equal((await handle.result).stopReason, 'pending')
      pool.push({ prompt, runId: handle.id })
    }
    await waitFor(async () => (await first.ctx.checkpoints.questions.pending()).length === RUNS, 'every task parked in the store')
    await first.stop()
    const second = await host(file)
    await waitFor(() => second.ctx.subagents.pending().length === RUNS, 'every stored parked run listed')
    tasks.clear()
    const again = second.ctx.agents.create({ label: 'lead' })
    assert.equal(again.id, lead.id)

    const seen = { refusedResumes: 0, takenOver: 0 }
    const property = fc.asyncProperty(fc.constantFrom('rerun', 'resume'), fc.nat({ max: 60 }), async (leader, offset) => {
      const { prompt, runId } = pool.shift()!
      const rerun = () => second.ctx.subagents.delegate('fx', request(prompt, again)).then(async (handle) => {
        let outcome = await handle.result
        if (outcome.stopReason === 'pending') {
          seen.takenOver++
          outcome = await handle.resume('red')
        }
        await handle.dispose()
        return outcome
      }, (error: unknown) => error as Error)
      const resume = () => second.ctx.subagents.resume(runId, 'blue').then((outcome) => outcome, (error: unknown) => error as Error)
      const one = leader === 'rerun' ? rerun() : resume()
      await turns(offset)
      const other = leader === 'rerun' ? resume() : rerun()
      const [a, b] = await Promise.all([one, other])
      const [rerunOutcome, resumeOutcome] = leader === 'rerun' ? [a, b] : [b, a]

      const task = taskOf(prompt)
      assert.equal(task.starts + task.restores, 1, `one child for the task (starts ${task.starts}, restores ${task.restores})`)
      assert.ok(task.most <= 1, `never two children of the task live at once (${task.most})`)
      assert.equal(task.answers.length, 1, `one answer applied once (${task.answers.join(', ')})`)
      const [answer] = task.answers
      assert.equal((rerunOutcome as SubagentOutcome).output, `got ${answer}`, `the re-run gives the task's answer: ${String(rerunOutcome)}`)
      if (answer === 'blue') {
        assert.equal((resumeOutcome as SubagentOutcome).output, 'got blue')
      } else {
        assert.equal((resumeOutcome as { code?: string }).code, 'NOT_PARKED', `the resume is refused: ${String(resumeOutcome)}`)
        seen.refusedResumes++
      }
      const store = second.ctx.checkpoints
      await waitFor(async () => ['settled', 'closed'].includes((await store.load(runId))!.state)
        && (await store.questions.pending({ runId })).length === 0, `stored run ${runId} no longer parked`)
    })
    await fc.assert(property, {
      numRuns: RUNS,
      // One parked task per run: no shrinking (it would need more); the seed replays the failing schedule.
      endOnFailure: true,
      ...SEED === undefined ? {} : { seed: SEED },
    })
    assert.ok([...tasks.values()].every((task) => task.live.size === 0), 'no child left live')
    console.log(`      ${RUNS} schedules: ${seen.takenOver} taken over by the re-run (its resume refused: ${seen.refusedResumes}), `
      + `${RUNS - seen.takenOver} continued by the resume`)
  })
})
