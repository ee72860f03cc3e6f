/// <reference types="mocha" />
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { Context } from 'cordis'
import type { Agent } from '@cordis-subagents/agent'
import { SubagentService } from '../service.js'
import type { ProviderStartRequest, SubagentProvider, SubagentRun, SubagentStopReason, SubagentUpdate } from '../types.js'
import { isCount } from '@cordis-subagents/shared'
import { settledResult, ticks, within } from './contract-helpers.js'
import { describeSteering, type ProviderSteeringSubject } from './contract-steering.js'

export type { ProviderSteeringSubject } from './contract-steering.js'

/** What `describeProviderContract` needs to exercise a provider. */
export interface ProviderContractSubject {
  /** A provider whose runs of `prompts.completing` finish on their own with `completed` and some output. */
  completing: SubagentProvider
  /** A provider whose runs of `prompts.waiting` keep working until they are cancelled (may be `completing`). */
  waiting: SubagentProvider
  /** The parent agent of every request (a real `Agent` for in-process providers; `{ id, depth, cwd }` may do for remote ones). */
  parent: Agent
  prompts?: { completing?: string; waiting?: string }
  /** Stop reasons a cancelled or disposed run may end with. Default: `['aborted']`. */
  cancelledStopReasons?: readonly SubagentStopReason[]
  /**
   * Throws (or rejects) when anything the provider started is still running: a process, a
   * model call, a timer of yours. Called after every run was disposed and after every rejected
   * start. Without it the suite cannot check "nothing left running".
   */
  assertIdle?(): void | Promise<void>
  /** Called after each test (stop your Context, kill strays). */
  teardown?(): void | Promise<void>
  /**
   * Required when the provider's runs have `send` (steering): the suite then checks follow-up
   * messages (see `ProviderSteeringSubject`). A provider without `send` leaves it out.
   */
  steering?: ProviderSteeringSubject
}

export interface ProviderContractOptions {
  /** Longest wait for any one step of a run (ms) before the suite reports it hung. Default 10,000. */
  stepTimeout?: number
  /**
   * true adds the steering cases (`send`), which need the subject's `steering`. A provider whose
   * runs have `send` must turn them on: the hand-over case fails otherwise.
   */
  steering?: boolean
}

const UPDATE_KINDS = new Set<string>(['step', 'text', 'thought', 'tool-call', 'tool-result', 'plan', 'status', 'usage'])

/**
 * A mocha suite every provider (ours and third parties') runs against the contract of
 * `SubagentProvider` (see "Writing a provider" in the service README): hand-over, a result that
 * never rejects, cancel, idempotent awaited dispose, aborts before and during start, updates
 * only while the run works, the shape of usage and work, and registration with `ctx.subagents`.
 * `factory` is called before each test; `teardown` after it.
 */
export function describeProviderContract(
  name: string,
  factory: () => ProviderContractSubject | Promise<ProviderContractSubject>,
  options: ProviderContractOptions = {},
): void {
  const bound = options.stepTimeout ?? 10_000

  describe(`provider contract: ${name}`, function () {
    this.timeout(bound * 4)
    let subject: ProviderContractSubject
    let open: SubagentRun[] = []

    beforeEach(async () => {
      subject = await factory()
      open = []
    })
    afterEach(async () => {
      // A failed test may leave runs behind: dispose them before the subject goes.
      await Promise.allSettled(open.map((run) => run.dispose()))
      await subject.teardown?.()
    })

    const prompt = (kind: 'completing' | 'waiting') =>
      subject.prompts?.[kind] ?? (kind === 'completing' ? 'Say hello.' : 'Work until you are cancelled.')
    const cancelled = () => subject.cancelledStopReasons ?? ['aborted']

    function request(kind: 'completing' | 'waiting', signal = new AbortController().signal) {
      const updates: Array<{ update: SubagentUpdate; afterEnd: boolean }> = []
      let ended = false
      const built: ProviderStartRequest = {
        prompt: prompt(kind),
        parent: subject.parent,
        signal,
        runId: `contract-${randomUUID()}`,
        depth: subject.parent.depth + 1,
        maxDepthCeiling: subject.parent.depth + 2,
        onUpdate: (update) => { updates.push({ update, afterEnd: ended }) },
      }
      return { request: built, updates, end: () => { ended = true } }
    }

    async function start(provider: SubagentProvider, built: ProviderStartRequest): Promise<SubagentRun> {
      const run = await within(provider.start(built), bound, 'start()')
      open.push(run)
      return run
    }

    async function idle() {
      await subject.assertIdle?.()
    }

    it('hands over a run: its id is the runId, it has result, cancel and dispose', async () => {
      const { request: built } = request('completing')
      const run = await start(subject.completing, built)
      assert.equal(run.id, built.runId)
      assert.equal(typeof run.result?.then, 'function', 'run.result must be a promise')
      assert.equal(typeof run.cancel, 'function')
      assert.equal(typeof run.dispose, 'function')
      if (run.send !== undefined) {
        assert.equal(typeof run.send, 'function', 'send, when set, must be a function')
        assert.ok(options.steering && subject.steering,
          'runs have send(): pass { steering: true } and give the subject `steering`, so the suite checks follow-up messages')
      }
      if (run.childId !== undefined) assert.equal(typeof run.childId, 'string', 'childId, when set, must be a string')
      await settledResult(run, bound)
      await within(run.dispose(), bound, 'dispose()')
      await idle()
    })

    it('completes on its own: a well-formed result with output, usage and work in shape', async () => {
      const { request: built, updates, end } = request('completing')
      const run = await start(subject.completing, built)
      const result = await settledResult(run, bound)
      end()
      assert.equal(result.stopReason, 'completed', `expected completed, got ${result.stopReason}: ${result.diagnostic ?? ''}`)
      assert.equal(typeof result.output, 'string')
      assert.ok(result.output.trim(), 'a completed run returns some output')
      if (result.diagnostic !== undefined) assert.equal(typeof result.diagnostic, 'string')
      if (result.usage !== undefined) {
        for (const key of ['inputTokens', 'outputTokens'] as const) assert.ok(isCount(result.usage[key]), `usage.${key} must be a count`)
        if (result.usage.cachedInputTokens !== undefined) assert.ok(isCount(result.usage.cachedInputTokens))
      }
      if (result.work !== undefined) {
        for (const key of ['steps', 'toolCalls', 'delegations'] as const) assert.ok(isCount(result.work[key]), `work.${key} must be a count`)
      }
      for (const { update } of updates) assert.ok(UPDATE_KINDS.has(update.kind), `unknown update kind ${String(update.kind)}`)
      await within(run.dispose(), bound, 'dispose()')
      await idle()
    })

    it('sends updates only while the run works: none after its result settled', async () => {
      const { request: built, updates, end } = request('completing')
      const run = await start(subject.completing, built)
      await settledResult(run, bound)
      end()
      await within(run.dispose(), bound, 'dispose()')
      await ticks(10)
      assert.deepEqual(updates.filter((entry) => entry.afterEnd).map((entry) => entry.update), [])
    })

    it('cancel() ends a working run with a cancelled stop reason; a second cancel is harmless', async () => {
      const { request: built } = request('waiting')
      const run = await start(subject.waiting, built)
      run.cancel('the contract suite cancelled it')
      run.cancel('again')
      const result = await settledResult(run, bound)
      assert.ok(cancelled().includes(result.stopReason), `expected one of ${cancelled().join(', ')}, got ${result.stopReason}`)
      assert.equal(typeof result.output, 'string')
      await within(run.dispose(), bound, 'dispose()')
      await idle()
    })

    it('dispose() of a working run is idempotent, awaited and settles the result; nothing is left running', async () => {
      const { request: built } = request('waiting')
      const run = await start(subject.waiting, built)
      const first = run.dispose()
      const second = run.dispose()
      await within(Promise.all([first, second]), bound, 'dispose()')
      // Awaited: by the time dispose resolved, the child is quiescent.
      await idle()
      await ticks(5)
      const result = await within(run.result, bound, 'the result after dispose()')
      assert.ok([...cancelled(), 'error'].includes(result.stopReason), `a disposed run ended ${result.stopReason}`)
      await within(run.dispose(), bound, 'a third dispose()')
    })

    it('cancel() and dispose() after the result settled are harmless and change nothing', async () => {
      const { request: built } = request('completing')
      const run = await start(subject.completing, built)
      const result = await settledResult(run, bound)
      run.cancel('too late')
      await within(run.dispose(), bound, 'dispose()')
      await within(run.dispose(), bound, 'a second dispose()')
      assert.deepEqual(await run.result, result)
      await idle()
    })

    it('a request whose signal is already aborted is rejected, with nothing left running', async () => {
      const { request: built } = request('waiting', AbortSignal.abort(new Error('aborted before start')))
      const outcome = await within(subject.waiting.start(built).then(
        (run) => { open.push(run); return 'fulfilled' as const },
        () => 'rejected' as const,
      ), bound, 'start() with an aborted signal')
      assert.equal(outcome, 'rejected', 'start() must reject a request whose signal is already aborted')
      await idle()
    })

    it('an abort during start() either rejects with nothing left running or hands over a run that still ends cleanly', async () => {
      const controller = new AbortController()
      const { request: built } = request('waiting', controller.signal)
      const starting = subject.waiting.start(built)
      controller.abort(new Error('aborted during start'))
      const run = await within(starting.then((value) => value, () => undefined), bound, 'start() aborted midway')
      if (run) {
        open.push(run)
        run.cancel('aborted during start')
        const result = await settledResult(run, bound)
        assert.ok([...cancelled(), 'error'].includes(result.stopReason), `ended ${result.stopReason}`)
        await within(run.dispose(), bound, 'dispose()')
      }
      await idle()
    })

    it('registers with ctx.subagents and completes a delegation through it', async () => {
      const ctx = new Context()
      ctx.plugin(SubagentService)
      await ctx.start()
      try {
        ctx.subagents.register(subject.completing)
        const handle = await within(ctx.subagents.delegate(subject.completing.name, {
          prompt: prompt('completing'), parent: subject.parent, signal: new AbortController().signal,
        }), bound, 'ctx.subagents.delegate()')
        const result = await within(handle.result, bound, 'the delegated result')
        assert.equal(result.stopReason, 'completed', result.diagnostic)
        await within(handle.dispose(), bound, 'dispose()')
        assert.deepEqual(ctx.subagents.runs(), [])
      } finally {
        await ctx.stop()
      }
      await idle()
    })

    if (options.steering) describeSteering(() => subject, (run) => { open.push(run) }, bound)
  })
}
