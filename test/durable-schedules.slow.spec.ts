// Issue 38's proof: a fault-injection property test over random schedules of start (sync and
// background; children that finish, ask, or hang mid-turn), answer (by the parent's model with
// subagent_reply, by the root's resume in escalate mode, by run id through ctx.subagents.resume),
// reattach, resume of stored runs, ctx.stop(), SIGKILL and restart, against real host processes on
// a real SQLite file and a real PostgreSQL. The harness: test/support/durable-schedule-*.ts; the
// invariants and what a SIGKILL may lose: RELIABILITY.md, "Durable schedules".
//
// DURABLE_RUNS (default 20 per store), DURABLE_SEED and DURABLE_PATH (replay what a failure prints),
// DURABLE_STORE=sqlite|postgres (one store only), DURABLE_FOCUS=<regex> (fail only on matching violations),
// DURABLE_SHRINK=0 (report the first failing schedule unshrunk).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { freshPostgres } from '../packages/checkpoints/tests/support.js'
import { HostProcess } from './support/durable-schedule-client.js'
import { play, schedules, type Step, World } from './support/durable-schedule-steps.js'

const RUNS = Number(process.env.DURABLE_RUNS ?? 20)
const SEED = process.env.DURABLE_SEED === undefined ? undefined : Number(process.env.DURABLE_SEED)
const PATH = process.env.DURABLE_PATH
const ONLY = process.env.DURABLE_STORE
/** Count only the violations matching this pattern (to shrink a schedule for one invariant while others fail too). */
const FOCUS = process.env.DURABLE_FOCUS ? new RegExp(process.env.DURABLE_FOCUS) : undefined

const describeStep = (s: Step) => 'pick' in s ? `${s.op}#${s.pick}` : s.op === 'start' ? `start ${s.mode} ${s.kind}` : s.op

/**
 * Schedules one store and host play before a fresh one: a world that lived for 1,000 schedules would hold
 * thousands of runs and parked questions, past the store's own bounds (`maxPendingQuestions`, 1,000; the
 * service lists at most 1,000 stored parked runs), which the invariants would then report as losses.
 */
const SCHEDULES_PER_WORLD = 50

function property(name: string, label: string, fresh: (n: number) => Promise<string>, dir: () => string) {
  it(`${name}: the invariants hold over ${RUNS} random schedules`, async function () {
    this.timeout(Math.max(600_000, RUNS * 90_000))
    // An unreachable PostgreSQL fails here, with how to start one, before any schedule.
    await fresh(0)
    let n = 0
    let played = 0
    let world: World | undefined
    // After the first failure (fast-check then shrinks) every schedule gets a world of its own, so
    // the shrunk schedule fails on its own; before it, schedules share one while none fails.
    let failed = false
    try {
      await fc.assert(fc.asyncProperty(schedules, async (steps) => {
        if (!world || failed || world.tainted || world.schedules >= SCHEDULES_PER_WORLD) {
          await world?.close().catch(() => {})
          // One log per store and property: the SQLite and PostgreSQL properties share `dir`.
          world = await World.open(await fresh(++n), join(dir(), `${label}-world-${n}.log`))
        }
        const result = await play(steps, world, (v) => !FOCUS || FOCUS.test(v)).catch((error: Error) => {
          failed = true
          throw error
        })
        played++
        if (result.violations.length) {
          failed = true
          throw new Error(`${result.violations.join('\n')}\nschedule: ${steps.map(describeStep).join(', ')}\ntrace:\n  ${result.trace.join('\n  ')}`)
        }
      }), { numRuns: RUNS, seed: SEED, path: PATH, endOnFailure: process.env.DURABLE_SHRINK === '0' })
    } finally {
      await (world as World | undefined)?.close().catch(() => {})
      await HostProcess.dropSpare()
    }
    console.log(`      durable (${name}): ${played} schedules played on ${n} stores, every invariant held`)
  })
}

describe('durable schedules: exactly once across stops, SIGKILLs, restarts and answers (fault injection, fast-check)', () => {
  let dir: string
  before(() => { dir = mkdtempSync(join(tmpdir(), 'durable-schedules-')) })
  after(() => rmSync(dir, { recursive: true, force: true }))

  if (ONLY !== 'postgres') property('SQLite', 'sqlite', async (n) => join(dir, `store-${n}.db`), () => dir)
  if (ONLY !== 'sqlite') {
    property('PostgreSQL (CHECKPOINTS_PG_URL; the test run starts one)', 'postgres', async () => {
      await freshPostgres()
      return 'postgres'
    }, () => dir)
  }
})
