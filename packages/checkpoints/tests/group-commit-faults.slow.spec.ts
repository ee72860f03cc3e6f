// Fault injection on the group commit and its run log: over random schedules of lazy start records and
// logged settles, with random batches failing (before they write anything, or after a part of them, as a
// pipelined PostgreSQL batch can) and a stop at the end, every settle the run log took is in the
// database once the next start has written what the log kept. The database is a model (a map of rows)
// behind a writer that applies each batch's statement texts as the real ones do; the run log is the real file.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import fc from 'fast-check'
import { within } from '@cordis-subagents/test-support'
import { GroupCommit } from '../src/group-commit.js'
import { openRunLog, unwrittenIn } from '../src/run-log.js'
import { type OpRow, replayOps, type WriteOp } from '../src/write-ops.js'
import { type Fault, modelDatabase } from './model-database.js'

/**
 * The wait before a retry: 100 ms in the store (RETRY_MS), shortened here (the schedules wait through some 90 retries).
 * Still four times the lazy flush's 5 ms and far longer than the turns a schedule takes between two drains, so a retry
 * comes after the same flushes and steps as at 100 ms.
 */
const RETRY_MS = 20

const insert = (id: string): WriteOp => ({ kind: 'insert', id, given: { id, path: id, provider: 'spawn', state: 'running' } as OpRow })
const settle = (id: string): WriteOp => ({ kind: 'update', id, changes: { state: 'settled', result: `done ${id}` } as OpRow, guard: false })

const step = fc.oneof(
  fc.record({ kind: fc.constant('start' as const) }),
  fc.record({ kind: fc.constant('settle' as const), pick: fc.nat() }),
  // A turn of the event loop, or a wait for everything queued (a read drains first), retries included.
  fc.record({ kind: fc.constant('turn' as const), drain: fc.boolean() }),
)
const fault = fc.oneof(
  { weight: 1, arbitrary: fc.constant<Fault>({ fail: false }) },
  { weight: 1, arbitrary: fc.nat({ max: 3 }).map((after): Fault => ({ fail: true, after })) },
)

describe('checkpoints: the group commit and its run log under failing batches (fault injection, fast-check)', function () {
  this.timeout(300_000)
  let dir: string
  before(() => { dir = mkdtempSync(join(tmpdir(), 'group-commit-faults-')) })
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('property: every settle the run log took is in the database after the next start; a stop always ends', async () => {
    let n = 0
    const schedules = fc.array(step, { minLength: 1, maxLength: 30 })
    const failures = fc.array(fault, { minLength: 2, maxLength: 16 })
    await fc.assert(fc.asyncProperty(schedules, failures, async (steps, faults) => {
      const file = join(dir, `run-${++n}.runlog`)
      const pending = [...faults]
      const { rows, writer } = modelDatabase(pending)
      const log = await openRunLog(file, (ops) => replayOps(writer, ops))
      const commit = new GroupCommit(writer, log, () => {}, RETRY_MS)
      const started: string[] = []
      const logged = new Set<string>()
      for (const next of steps) {
        if (next.kind === 'start') {
          const id = `r${started.length}`
          started.push(id)
          commit.writeLazy(insert(id))
        } else if (next.kind === 'settle' && started.length) {
          const id = started[next.pick % started.length]
          if (!logged.has(id) && commit.writeLogged(settle(id))) logged.add(id)
        } else if (next.kind === 'turn') {
          if (next.drain) await within(commit.drain(), 10_000, 'a drain')
          else await new Promise((resolve) => setImmediate(resolve))
        }
      }
      // The stop: what is queued is written (a batch failing now stays in the log), then the log closes.
      await within(commit.close(), 10_000, 'the group commit\'s close')
      log.close()
      // The next start (the database answers again): the records after the last marker, written again as a start does.
      pending.length = 0
      await replayOps(writer, unwrittenIn(file).flat())
      for (const id of logged) {
        expect(rows.get(id), `run ${id}, settled through the log (schedule ${JSON.stringify(steps)}, faults ${JSON.stringify(faults)})`)
          .to.include({ state: 'settled', result: `done ${id}` })
      }
    }), {
      numRuns: 120, includeErrorInReport: true,
      // Found by a CI run: a start record whose retries were all spent, then its run's logged settle.
      examples: [[
        [{ kind: 'start' }, { kind: 'turn', drain: true }, { kind: 'settle', pick: 0 }, { kind: 'turn', drain: false }],
        [{ fail: true, after: 0 }, { fail: true, after: 0 }, { fail: true, after: 0 }, { fail: true, after: 0 }],
      ], [
        // Found by a CI run: the start's last try ran its insert, then the batch failed (counted lost); the settle merged
        // into the start queued again; the stop's batch failed; the next start's insert found the row and wrote nothing.
        [{ kind: 'start' }, { kind: 'turn', drain: true }, { kind: 'settle', pick: 0 }],
        [{ fail: true, after: 0 }, { fail: true, after: 0 }, { fail: true, after: 0 }, { fail: true, after: 1 }, { fail: true, after: 0 },
          { fail: false }],
      ], [
        // Found by a longer run: a batch failed with a run's start in it; that run's logged settle was flushed as a batch of
        // its own during the retry's wait and ran first (no row yet), then the retried start: the run stayed running.
        [{ kind: 'start' }, { kind: 'turn', drain: true }, { kind: 'settle', pick: 0 }, { kind: 'start' }, { kind: 'turn', drain: false },
          { kind: 'settle', pick: 1 }, { kind: 'turn', drain: true }],
        [{ fail: false }, { fail: true, after: 0 }],
      ], [
        // Found by the same run: a start ran in a batch that then failed; retried, it found its row and ran as updates,
        // which failed too, and its run's settle merged into it was counted written.
        [{ kind: 'start' }, { kind: 'start' }, { kind: 'turn', drain: true }, { kind: 'start' }, { kind: 'settle', pick: 0 },
          { kind: 'turn', drain: false }, { kind: 'turn', drain: false }, { kind: 'settle', pick: 2 }],
        [{ fail: false }, { fail: true, after: 1 }, { fail: false }, { fail: true, after: 0 }],
      ]],
    })
  })
})
