import { deferred, type Deferred } from '@cordis-subagents/shared'
import { SubagentError } from '../errors.js'
import type {
  ProviderCapabilities, ProviderStartRequest, SubagentProvider, SubagentResult, SubagentRun, SubagentUpdate,
} from '../types.js'


export const ALL_CAPABILITIES: ProviderCapabilities = Object.freeze({ persona: true, toolFilter: true, depthLimit: true })
export const NO_CAPABILITIES: ProviderCapabilities = Object.freeze({ persona: false, toolFilter: false, depthLimit: false })

/**
 * One run of a `FakeProvider`: the test settles its result (`complete`, `finish`) and watches
 * `cancel` and `dispose`. The switches let a test play a provider that misbehaves.
 */
export class FakeRun {
  /** Settles `run.result`; `unknown` so a test can play a provider settling with garbage. */
  readonly outcome = deferred<unknown>()
  readonly cancels: (string | undefined)[] = []
  disposeCalls = 0
  /** When set, dispose() waits for it. */
  disposeGate?: Deferred<void>
  /** When set, dispose() rejects with it. */
  disposeError?: unknown
  /** cancel() settles an unsettled result as `aborted` with `partialOutput` (default true). */
  settleOnCancel = true
  /** dispose() settles an unsettled result as `aborted` (default true). */
  settleOnDispose = true
  /** The output a cancel settles with. */
  partialOutput = 'partial'
  /** Follow-up messages taken by `run.send` (set when the provider is `steerable`). */
  readonly sent: string[] = []
  /** When set, `run.send` throws it. */
  sendError?: unknown
  readonly run: SubagentRun
  /** The turn in flight: `outcome` first, then the one each `resume` / `wake` / `close` starts. */
  turn: Deferred<unknown> = this.outcome
  /** Answers `resume` took (a `parkable` provider's runs). */
  readonly answers: string[] = []
  /** Calls of `interrupt`, `wake` and `close`. */
  readonly verbs: string[] = []
  /** What `checkpoint()` returns. */
  checkpointValue: unknown = { fake: 'checkpoint' }
  private questions = 0

  constructor(readonly request: ProviderStartRequest, childId?: string) {
    this.run = {
      id: request.runId,
      ...childId === undefined ? {} : { childId },
      result: this.outcome.promise as Promise<SubagentResult>,
      cancel: (reason) => {
        this.cancels.push(reason)
        if (this.settleOnCancel && !this.turn.settled) {
          this.turn.resolve({ stopReason: 'aborted', output: this.partialOutput, diagnostic: `cancelled: ${reason}` })
        }
      },
      dispose: async () => {
        this.disposeCalls++
        if (this.disposeGate) await this.disposeGate.promise
        if (this.settleOnDispose && !this.turn.settled) {
          this.turn.resolve({ stopReason: 'aborted', output: '', diagnostic: 'disposed' })
        }
        if (this.disposeError !== undefined) throw this.disposeError
      },
    }
  }

  /** What a steerable run's `send` does: refuses once the result settled, else records the message. */
  receive(message: string): void {
    if (this.sendError !== undefined) throw this.sendError
    if (this.turn.settled) throw new SubagentError('NOT_RUNNING', 'The fake run has ended.')
    this.sent.push(message)
  }

  /** Settles the result as `completed`. */
  complete(output = 'done', extra: Partial<SubagentResult> = {}): void {
    this.turn.resolve({ stopReason: 'completed', output, ...extra })
  }

  /** Parks the turn in flight on a question (`pending`, kind `ask`, path `[]`). */
  ask(text = 'Which file?', extra: Partial<SubagentResult> = {}): void {
    this.turn.resolve({ stopReason: 'pending', output: '', question: { id: `q-${this.request.runId}-${++this.questions}`, kind: 'ask', text, path: [] }, ...extra })
  }

  /** Gives the run `resume`, `interrupt`, `wake`, `close` and `checkpoint`, each starting (or ending) a turn the test settles. */
  parkable(): void {
    const next = () => (this.turn = deferred<unknown>()).promise as Promise<SubagentResult>
    Object.assign(this.run, {
      resume: (answer: string) => { this.answers.push(answer); return next() },
      interrupt: () => {
        this.verbs.push('interrupt')
        this.turn.resolve({ stopReason: 'interrupted', output: this.partialOutput })
      },
      wake: () => { this.verbs.push('wake'); return next() },
      close: () => {
        this.verbs.push('close')
        const closing = next()
        this.turn.resolve({ stopReason: 'closed', output: this.partialOutput })
        return closing
      },
      checkpoint: () => this.checkpointValue,
    })
  }

  /** Settles the result with anything (defaults: `completed`, empty output). */
  finish(result: Partial<SubagentResult> | Record<string, unknown>): void {
    this.turn.resolve({ stopReason: 'completed', output: '', ...result })
  }

  /** Reports progress through the request's `onUpdate`, as a provider does. */
  update(kind: SubagentUpdate['kind'], text?: string): void {
    this.request.onUpdate!({ kind, ...text === undefined ? {} : { text } })
  }
}

/**
 * A provider whose starts the test controls: every `start` is recorded in `calls`, and each run
 * is a `FakeRun` the test settles. Register it with `ctx.subagents.register(provider)`.
 */
export class FakeProvider implements SubagentProvider {
  description?: string
  capabilities: ProviderCapabilities
  inheritsParentContext = false
  readonly calls: ProviderStartRequest[] = []
  readonly runs: FakeRun[] = []
  /** When set, start() waits for it before handing over. */
  hold?: Deferred<void>
  /** When set, start() rejects with it (after `hold`). */
  startError?: unknown
  /** When set, start() fulfils with this instead of a FakeRun. */
  fakeRun?: unknown
  /** Called with each new run right before the hand-over (e.g. to settle it early, or to tune it). */
  onRun?: (run: FakeRun) => void
  /** start() rejects `ABORTED` without recording a call when the signal is already aborted (default true). */
  rejectAborted = true
  /** Switches set on every new run (e.g. `{ settleOnDispose: false }`). */
  runDefaults: Partial<Pick<FakeRun, 'settleOnCancel' | 'settleOnDispose' | 'partialOutput'>> = {}
  /** Runs get `send` (recorded in `FakeRun.sent`); without it they cannot be steered. */
  steerable = false
  /** Runs get `resume`, `interrupt`, `wake`, `close` and `checkpoint` (see `FakeRun.parkable`). */
  parkable = false

  constructor(readonly name: string, capabilities: ProviderCapabilities = ALL_CAPABILITIES) {
    this.capabilities = { ...capabilities }
  }

  start = async (request: ProviderStartRequest): Promise<SubagentRun> => {
    if (this.rejectAborted && request.signal.aborted) throw new SubagentError('ABORTED', 'The start was aborted; no run was made.')
    this.calls.push(request)
    if (this.hold) await this.hold.promise
    if (this.startError !== undefined) throw this.startError
    if (this.fakeRun !== undefined) return this.fakeRun as SubagentRun
    const run = Object.assign(new FakeRun(request, `child-${this.calls.length}`), this.runDefaults)
    if (this.steerable) run.run.send = (message) => run.receive(message)
    if (this.parkable) run.parkable()
    this.runs.push(run)
    this.onRun?.(run)
    return run.run
  }

  /** The newest run. */
  get last(): FakeRun {
    return this.runs[this.runs.length - 1]
  }

  get cancelCalls(): number {
    return this.runs.reduce((sum, run) => sum + run.cancels.length, 0)
  }

  get disposeCalls(): number {
    return this.runs.reduce((sum, run) => sum + run.disposeCalls, 0)
  }
}
