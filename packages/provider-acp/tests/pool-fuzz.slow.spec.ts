/// <reference types="mocha" />
import { expect } from 'chai'
import fc from 'fast-check'
import type { AcpRun } from '@cordis-subagents/provider-acp/testing'
import { liveProcessGroups } from '../src/index.js'
import { assertNoLeftovers, fixtureProcesses, fixtureProvider, request, until } from './helpers.js'

type Op =
  | { op: 'start'; prompt: 'answer' | 'wait' | 'ignore' | 'crash' }
  | { op: 'cancel' | 'dispose' | 'kill'; index: number }
  | { op: 'pause'; ms: number }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('start' as const), prompt: fc.constantFrom('answer' as const, 'answer' as const, 'wait' as const, 'ignore' as const, 'crash' as const) }),
  fc.record({ op: fc.constantFrom('cancel' as const, 'dispose' as const, 'kill' as const), index: fc.nat(7) }),
  fc.record({ op: fc.constant('pause' as const), ms: fc.constantFrom(0, 30, 120) }),
)

const configArb = fc.record({
  warm: fc.boolean(),
  reuse: fc.boolean(),
  spares: fc.integer({ min: 1, max: 2 }),
  maxProcesses: fc.integer({ min: 1, max: 3 }),
  maxSessionsPerProcess: fc.integer({ min: 1, max: 3 }),
}).filter((config) => config.warm || config.reuse)

describe('provider-acp: fuzzed acquire / release / cancel / kill interleavings on the pool', function () {
  this.timeout(120_000)

  afterEach(() => assertNoLeftovers())

  it('never two runs on one process at once, never a misbehaved process again, nothing alive after stop', async () => {
    await fc.assert(fc.asyncProperty(configArb, fc.array(opArb, { minLength: 1, maxLength: 7 }), async (config, ops) => {
      const acp = fixtureProvider('sessions', undefined, config)
      const runs: AcpRun[] = []
      const settled = new Set<AcpRun>()
      /** Processes that must never serve another run: a run on them was cancelled, killed, crashed or hung. */
      const spoiled = new Set<number>()
      let counter = 0
      try {
        for (const step of ops) {
          if (step.op === 'start') {
            const run = await acp.start(request({ prompt: step.prompt, runId: `fuzz-${++counter}` })) as AcpRun
            const pid = run.pid!
            const busy = runs.filter((other) => !settled.has(other) && other.pid === pid)
            expect(busy, `run ${run.id} got process ${pid} while another run was on it`).to.deep.equal([])
            expect(spoiled.has(pid), `run ${run.id} got process ${pid}, which misbehaved before`).to.equal(false)
            if (!config.reuse) expect(run.processKind).to.not.equal('reused')
            runs.push(run)
            void run.result.then(() => settled.add(run))
            if (step.prompt !== 'answer') spoiled.add(pid)
          } else if (step.op === 'pause') {
            await new Promise((resolve) => setTimeout(resolve, step.ms))
          } else {
            const run = runs[step.index % Math.max(1, runs.length)]
            if (!run) continue
            if (step.op === 'cancel') {
              // A cancel after the end changes nothing (the process may be back in the pool).
              if (!settled.has(run)) spoiled.add(run.pid!)
              run.cancel('fuzz')
            } else if (step.op === 'dispose') {
              if (!settled.has(run)) spoiled.add(run.pid!)
              await run.dispose()
            } else {
              spoiled.add(run.pid!)
              try {
                process.kill(run.pid!, 'SIGKILL')
              } catch {
                // already gone
              }
            }
          }
          const counts = acp.pool!.counts()
          // Waiting processes never push the total past maxProcesses (runs themselves may; those being stopped are not counted).
          const total = counts.idle + counts.starting + counts.busy
          if (counts.idle + counts.starting > 0) expect(total, JSON.stringify(counts)).to.be.at.most(config.maxProcesses)
        }
      } finally {
        await Promise.all(runs.map((run) => run.dispose()))
        await acp.stop()
      }
      for (const run of runs) expect(['completed', 'aborted', 'error']).to.include((await run.result).stopReason)
      try {
        await until(() => fixtureProcesses().length === 0 && liveProcessGroups().length === 0, 'every agent process to be gone after stop', 5000)
      } catch (error) {
        const left = fixtureProcesses()
        for (const entry of left) process.kill(entry.pid, 'SIGKILL')
        throw new Error(`${(error as Error).message}: ${JSON.stringify({ config, ops, left: left.map((entry) => entry.pid), runs: runs.map((run) => [run.pid, run.processKind]), groups: liveProcessGroups(), counts: acp.pool!.counts() })}`)
      }
    }), { numRuns: 12 })
  })
})
