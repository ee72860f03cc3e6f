/// <reference types="mocha" />
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import type { Agent } from '@cordis-subagents/agent'
import { headChars } from '@cordis-subagents/shared'
import type { SubagentProvider, SubagentRun, SubagentStopReason } from '../types.js'
import { assertCode, settledResult, within } from './contract-helpers.js'

/** What the steering cases of the contract suite need. */
export interface ProviderSteeringSubject {
  /**
   * A provider whose runs of `prompt` keep working at least until the suite's first `send` was
   * made (until a follow-up arrives, or a while: a few hundred ms is plenty), honour `cancel`,
   * then complete on their own with an output that names every follow-up message they read in
   * this run (the suite looks for each message's text in the output). May be `completing`.
   */
  provider: SubagentProvider
  prompt: string
  /**
   * Most follow-up messages a run takes while none was read: `send` past it must throw a
   * `SubagentError` (`INVALID_REQUEST`), never drop a message silently. The burst case sends
   * this many, then one more.
   */
  maxQueued: number
}

/** What the steering cases read of the contract subject. */
interface SteeringHost {
  parent: Agent
  steering?: ProviderSteeringSubject
  cancelledStopReasons?: readonly SubagentStopReason[]
  assertIdle?(): void | Promise<void>
}

/** The steering cases: they run when the subject has `steering` (a provider whose runs have `send`). */
export function describeSteering(
  current: () => SteeringHost, track: (run: SubagentRun) => void, bound: number,
): void {
  describe('steering (send)', function () {
    let steering: ProviderSteeringSubject
    let parent: Agent

    beforeEach(() => {
      const subject = current()
      assert.ok(subject.steering, 'the steering cases need the subject\'s `steering`')
      steering = subject.steering
      parent = subject.parent
    })

    async function startSteered(): Promise<SubagentRun & { send(message: string): void }> {
      const run = await within(steering.provider.start({
        prompt: steering.prompt,
        parent,
        signal: new AbortController().signal,
        runId: `contract-${randomUUID()}`,
        depth: parent.depth + 1,
        maxDepthCeiling: parent.depth + 2,
        onUpdate: () => {},
      }), bound, 'start()')
      track(run)
      assert.equal(typeof run.send, 'function', 'the steering provider\'s runs must have send()')
      return run as SubagentRun & { send(message: string): void }
    }

    const idle = () => current().assertIdle?.()

    it('a follow-up sent while the run works is read before its result', async () => {
      const run = await startSteered()
      const message = `follow-up ${randomUUID()}`
      run.send(message)
      const result = await settledResult(run, bound)
      assert.equal(result.stopReason, 'completed', `expected completed, got ${result.stopReason}: ${result.diagnostic ?? ''}`)
      assert.ok(result.output.includes(message),
        `the output does not name the follow-up it read: ${JSON.stringify(headChars(result.output, 500))}`)
      await within(run.dispose(), bound, 'dispose()')
      await idle()
    })

    it('send() after the result settled throws NOT_RUNNING', async () => {
      const run = await startSteered()
      run.send(`first ${randomUUID()}`)
      const result = await settledResult(run, bound)
      assertCode(() => run.send('too late'), 'NOT_RUNNING')
      await within(run.dispose(), bound, 'dispose()')
      assertCode(() => run.send('after dispose'), 'NOT_RUNNING')
      assert.deepEqual(await run.result, result, 'a refused send changed the result')
      await idle()
    })

    it('send() after cancel() throws NOT_RUNNING and the run ends cancelled', async () => {
      const run = await startSteered()
      run.cancel('the contract suite cancelled it')
      assertCode(() => run.send('after cancel'), 'NOT_RUNNING')
      const result = await settledResult(run, bound)
      const cancelled = current().cancelledStopReasons ?? ['aborted']
      assert.ok(cancelled.includes(result.stopReason), `expected one of ${cancelled.join(', ')}, got ${result.stopReason}`)
      await within(run.dispose(), bound, 'dispose()')
      await idle()
    })

    it('a burst of follow-ups is bounded (a refusal, never a silent drop) and every one taken is read', async () => {
      const { maxQueued } = steering
      assert.ok(Number.isSafeInteger(maxQueued) && maxQueued >= 1, 'steering.maxQueued must be a count >= 1')
      const run = await startSteered()
      const tag = randomUUID().slice(0, 8)
      const sent: string[] = []
      for (let i = 0; i < maxQueued; i++) {
        const message = `burst ${tag} #${i};`
        run.send(message)
        sent.push(message)
      }
      assertCode(() => run.send(`burst ${tag} over the limit`), 'INVALID_REQUEST')
      const result = await within(settledResult(run, bound * 3), bound * 3, 'the burst result')
      assert.equal(result.stopReason, 'completed', `expected completed, got ${result.stopReason}: ${result.diagnostic ?? ''}`)
      const lost = sent.filter((message) => !result.output.includes(message))
      assert.deepEqual(lost.slice(0, 5), [], `${lost.length} of ${sent.length} follow-ups taken were not read`)
      assert.ok(!result.output.includes('over the limit'), 'a refused follow-up was read anyway')
      await within(run.dispose(), bound, 'dispose()')
      await idle()
    })
  })
}

