/// <reference types="mocha" />
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { Context } from 'cordis'
import type { Agent } from '@cordis-subagents/agent'
import { STOP_REASONS } from '../outcome.js'
import { SubagentService } from '../service.js'
import type {
  ProviderStartRequest, SubagentProvider, SubagentResult, SubagentRun, SubagentStopReason, SubagentUpdate,
} from '../types.js'

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

/** The steering cases: they run when the subject has `steering` (a provider whose runs have `send`). */
function describeSteering(
  current: () => ProviderContractSubject, track: (run: SubagentRun) => void, bound: number,
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
      assert.ok(result.output.includes(message), `the output does not name the follow-up it read: ${JSON.stringify(result.output.slice(0, 500))}`)
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

function assertCode(action: () => void, code: string): void {
  let thrown: unknown
  try {
    action()
  } catch (error) {
    thrown = error
  }
  assert.ok(thrown !== undefined, `expected send() to throw ${code}; it returned`)
  assert.equal((thrown as { code?: unknown }).code, code, `expected ${code}, got ${String((thrown as Error).message ?? thrown)}`)
  assert.equal((thrown as Error).name, 'SubagentError', 'send() refusals are SubagentErrors')
}

function isCount(value: unknown): boolean {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
}

/** The run's result, which must fulfil (never reject) within `ms`. */
async function settledResult(run: SubagentRun, ms: number): Promise<SubagentResult> {
  const result = await within(Promise.resolve(run.result).then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  ), ms, 'the run result')
  if ('error' in result) assert.fail(`run.result rejected (it must never reject): ${String(result.error)}`)
  assert.ok(STOP_REASONS.includes(result.value?.stopReason), `unknown stop reason ${String(result.value?.stopReason)}`)
  return result.value
}

/** `promise`, or a failure naming `what` if it has not settled within `ms` (a hang, not a speed check). */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms)
  })
  try {
    return await Promise.race([promise, hung])
  } finally {
    clearTimeout(timer)
  }
}

async function ticks(times: number): Promise<void> {
  for (let i = 0; i < times; i++) await new Promise<void>((resolve) => setImmediate(resolve))
}
