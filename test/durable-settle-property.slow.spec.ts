// The clean-stop guarantee over random schedules (audit D1; fast-check): park a random set of runs (some of them
// background tasks), end a random subset in random ways (cancel, dispose, answer, cancel of the background task), and
// stop in the same tick or a few turns later; after a restart on the same SQLite file:
// - every run whose subagent/end was emitted before the stop began is settled in the store, its question not pending;
// - no settled run can be resumed (refused NOT_PARKED, no provider call);
// - every run left parked (the stop's own disposal of it is not its outcome) is parked and listed by pending().
// Real service, store and SQLite file; the provider is a fixture at the far edge. No wall-clock margins: every wait polls.
import { expect } from 'chai'
import fc from 'fast-check'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Context } from 'cordis'
import type { PendingQuestion } from '@cordis-subagents/shared'
import type { BackgroundTask, SubagentHandle, SubagentProvider, SubagentResult, SubagentRun } from '@cordis-subagents/subagents-service'
import type { Host } from './support/host.js'
import { sqliteHost } from './support/sqlite-host.js'
import { waitFor } from './support/host-process-wait.js'

const RUNS = Number(process.env.SETTLE_RUNS ?? 30)

/** Provider calls that run a turn of a child (an answer, a restore), across host starts. */
const calls = { restore: 0, answer: 0 }

function asker(): SubagentProvider {
  const run = (id: string, first: SubagentResult): SubagentRun => ({
    id, childId: `child-of-${id}`, result: Promise.resolve(first), cancel: () => {}, dispose: async () => {},
    resume: async (answer) => {
      calls.answer++
      return { stopReason: 'completed', output: `got ${answer}` }
    },
    checkpoint: () => ({ v: 1 }),
  })
  const question = (runId: string): PendingQuestion => ({ id: `q-${runId}`, kind: 'ask', text: 'Which colour?', path: [] })
  return {
    name: 'fx',
    capabilities: { persona: false, toolFilter: false, depthLimit: false },
    inheritsParentContext: false,
    start: async (request) => run(request.runId, { stopReason: 'pending', output: '', question: question(request.runId) }),
    async restore(record, request) {
      calls.restore++
      return run(request.runId, record.state === 'parked'
        ? { stopReason: 'pending', output: '', question: record.question! }
        : { stopReason: 'interrupted', output: '' })
    },
  }
}

async function durableHost(file: string): Promise<Host> {
  const host = await sqliteHost(file, 'settle-property', {
    before(ctx: Context) {
      ctx.plugin({ name: 'fx', apply: (inner: Context) => { inner.subagents.register(asker()) } })
    },
  })
  return host
}

type Way = 'keep' | 'cancel' | 'dispose' | 'answer' | 'task'
type Child = { handle: SubagentHandle; task?: BackgroundTask; way: Way }

/** One child per entry: background or not, and how the schedule ends it (`keep`: not at all; `task`: cancels its background task). */
const children = fc.array(fc.record({
  background: fc.boolean(),
  way: fc.constantFrom<Way>('keep', 'cancel', 'dispose', 'answer', 'task'),
}), { minLength: 1, maxLength: 5 })

async function park(host: Host, background: boolean, way: Way): Promise<Child> {
  const { ctx } = host
  const parent = ctx.agents.create({ label: 'lead' })
  const task = background
    ? ctx.subagents.background.start({ parent, label: 'paint', provider: 'fx', onTurnEnd: 'end', turnSignal: new AbortController().signal })
    : undefined
  const handle = await ctx.subagents.delegate('fx', { prompt: 'ask', parent, signal: new AbortController().signal })
  if (task) {
    task.markStarted(handle)
    task.bind((reason) => handle.cancel(String(reason)))
  }
  expect((await handle.result).stopReason).to.equal('pending')
  return { handle, ...task ? { task } : {}, way: way === 'task' && !task ? 'cancel' : way }
}

/** Ends `child` the schedule's way, synchronously (an answer's turn completes a few microtasks later). */
function end(child: Child): void {
  const { handle, task, way } = child
  if (way === 'cancel') handle.cancel('not needed any more')
  else if (way === 'dispose') void handle.dispose()
  else if (way === 'answer') void handle.resume('blue')
  else if (way === 'task') task!.cancel('the lead changed its mind')
}

describe('durable: a clean stop loses no end a caller saw, over random schedules (audit D1, fast-check)', function () {
  this.timeout(Math.max(300_000, RUNS * 20_000))
  let dir: string
  const hosts: Host[] = []
  before(() => { dir = mkdtempSync(join(tmpdir(), 'durable-settle-property-')) })
  afterEach(async () => { for (const host of hosts.splice(0)) await host.stop() })
  after(() => rmSync(dir, { recursive: true, force: true }))

  it(`park, end some, stop in the same tick or k turns later, restart: over ${RUNS} schedules`, async () => {
    let n = 0
    await fc.assert(fc.asyncProperty(children, fc.integer({ min: 0, max: 3 }), async (picked, turns) => {
      const file = join(dir, `schedule-${++n}.db`)
      const first = await durableHost(file)
      hosts.push(first)
      const parked: Child[] = []
      for (const { background, way } of picked) parked.push(await park(first, background, way))
      await waitFor(async () => (await first.ctx.checkpoints.questions.pending()).length === parked.length, 'every question stored')
      const ended = new Set<string>()
      let stopping = false
      first.ctx.subagents.observe({ 'subagent/end': (info) => { if (!stopping) ended.add(info.runId) } })
      for (const child of parked) end(child)
      for (let turn = 0; turn < turns; turn++) await new Promise<void>((resolve) => setImmediate(resolve))
      stopping = true
      await first.stop()

      const second = await durableHost(file)
      hosts.push(second)
      const { checkpoints, subagents } = second.ctx
      for (const { handle, way } of parked) {
        const what = `run ${handle.id} (${way}, stop after ${turns} turn(s))`
        const record = (await checkpoints.load(handle.id))!
        if (ended.has(handle.id)) {
          expect(record.state, `${what} ended before the stop`).to.be.oneOf(['settled', 'closed'])
          await waitFor(async () => (await checkpoints.questions.pending({ runId: handle.id })).length === 0, `${what}: its question not pending`)
        } else if (way === 'keep' || way === 'answer') {
          // Kept (the stop disposed it, which is not its outcome), or answered with its turn in flight at the stop.
          expect(record.state, `${what} did not end before the stop`).to.be.oneOf(way === 'keep' ? ['parked'] : ['parked', 'interrupted', 'settled'])
        }
      }
      await waitFor(() => parked.every(({ handle, way }) => way !== 'keep' || subagents.pending().some((run) => run.runId === handle.id)),
        'every run left parked listed by pending()')
      for (const record of await checkpoints.list()) {
        if (record.state !== 'settled' && record.state !== 'closed') continue
        const before = { ...calls }
        const refused = await subagents.resume(record.id, 'again').then(() => undefined, (error: { code?: string }) => error)
        expect(refused?.code, `a resume of settled run ${record.id}`).to.equal('NOT_PARKED')
        expect(calls, `no turn of settled run ${record.id}`).to.deep.equal(before)
      }
      for (const host of hosts.splice(0)) await host.stop()
    }), { numRuns: RUNS, includeErrorInReport: true })
  })
})
