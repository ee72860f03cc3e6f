import { capDiagnostic } from './diagnostic.js'
import { describeError } from '@cordis-subagents/shared'
import { SubagentError } from './errors.js'
import { isIdleStop } from './outcome.js'
import type { ProviderStartRequest, SubagentResult, SubagentRun, SubagentUpdate } from './types.js'

/** What a provider's `setup` gives back once its child exists (before it starts working). */
export interface ProviderRunParts {
  /** The child's identity as the provider knows it (an agent id, a session id). */
  childId?: string
  /**
   * Starts the child's work; called once, only when the start was not aborted during `setup`.
   * May reject: the rejection becomes an `error` result.
   */
  begin(): Promise<SubagentResult>
  /** Asks the child to stop; its `begin()` result should then settle (as `aborted`). */
  cancel(reason?: string): void
  /** Releases the child; resolves once it is quiescent. Called once. */
  dispose(): Promise<void> | void
  /** Optional (see `SubagentRun.resume`): continues a child whose last result was `pending`. May reject (an `error` result). */
  resume?(answer: string): Promise<SubagentResult>
  /** Optional (see `SubagentRun.interrupt`): ends the child's turn in flight as `interrupted`. */
  interrupt?(): void
  /** Optional (see `SubagentRun.wake`): a turn of an interrupted child on its inbox. May reject. */
  wake?(): Promise<SubagentResult>
  /** Optional (see `SubagentRun.close`): ends an idle child `closed`. May reject. */
  close?(): Promise<SubagentResult>
  /** Optional (see `SubagentRun.checkpoint`): the child's state as JSON. */
  checkpoint?(): unknown
}

/** What `setup` may use: the run's signal, and an update sink that drops updates after the end. */
export interface ProviderRunTools {
  signal: AbortSignal
  update(update: SubagentUpdate): void
}

/**
 * The part of a provider's `start` that every provider needs and that is easy to get subtly
 * wrong. Wrap your child in it and the run you hand over:
 *
 * - is never started when `request.signal` was aborted before `start` (rejects `ABORTED`,
 *   `setup` is not called), and is disposed before `start` rejects `ABORTED` when the signal
 *   aborted during `setup` (nothing is left running);
 * - settles `result` exactly once and never rejects it (a rejection of `begin()` becomes
 *   `{ stopReason: 'error', diagnostic }`);
 * - calls your `cancel` at most once, never after the result settled, also when the request's
 *   signal aborts;
 * - makes `dispose()` idempotent (every call returns the same promise), calls your `dispose`
 *   once, and settles a result still pending after it as `aborted`;
 * - drops updates sent after the result settled (a `pending` or `interrupted` result is not
 *   final: updates of the turns `resume` / `wake` run still pass);
 * - wraps your optional `resume`, `wake` and `close` so they never reject, and refuses them
 *   (`NOT_RUNNING`) once a final result settled or the run was disposed.
 *
 * A `setup` that throws rejects `start` with its error: it must leave nothing running.
 */
export async function startProviderRun(
  request: ProviderStartRequest,
  setup: (tools: ProviderRunTools) => Promise<ProviderRunParts> | ProviderRunParts,
): Promise<SubagentRun> {
  const { signal } = request
  if (signal.aborted) throw abortedStart('before the provider started it')
  let settled = false
  /** A result that is not `pending` / `interrupted` settled: the run is over. */
  let final = false
  const tools: ProviderRunTools = {
    signal,
    update: (update) => {
      if (!final) request.onUpdate?.(update)
    },
  }
  const parts = await setup(tools)
  if (signal.aborted) {
    await parts.dispose()
    throw abortedStart('while the provider was starting it')
  }

  let settle!: (result: SubagentResult) => void
  const result = new Promise<SubagentResult>((resolve) => settle = resolve)
  const finish = (value: SubagentResult) => {
    if (settled) return
    settled = true
    track(value)
    settle(value)
  }
  const track = (value: SubagentResult) => {
    if (final || isIdleStop(value?.stopReason)) return
    final = true
    signal.removeEventListener('abort', onAbort)
  }
  let cancelled = false
  const cancel = (reason?: string) => {
    if (cancelled || final) return
    cancelled = true
    try {
      parts.cancel(reason)
    } catch {
      // A failing cancel must not reach the holder; dispose still stops the child.
    }
  }
  const onAbort = () => cancel(reasonOf(signal.reason))
  signal.addEventListener('abort', onAbort, { once: true })

  let working: Promise<SubagentResult>
  try {
    working = Promise.resolve(parts.begin())
  } catch (error) {
    working = Promise.reject(error)
  }
  working.then(finish, (error) => finish({
    stopReason: 'error',
    output: '',
    diagnostic: capDiagnostic(`The child failed: ${describeError(error)}`),
  }))

  let disposal: Promise<void> | undefined
  const run: SubagentRun = {
    id: request.runId,
    result,
    cancel,
    dispose: () => disposal ??= (async () => {
      try {
        await parts.dispose()
      } finally {
        if (!settled) {
          // Give a result that settles right after dispose a chance, then settle it ourselves.
          await new Promise<void>((resolve) => setImmediate(resolve))
          finish({ stopReason: 'aborted', output: '', diagnostic: 'The run was disposed before it finished.' })
        }
      }
    })(),
  }
  if (parts.childId !== undefined) run.childId = parts.childId
  const later = (call: () => Promise<SubagentResult>): Promise<SubagentResult> => {
    if (final || disposal) return Promise.resolve({ stopReason: 'error', output: '', diagnostic: 'The child has ended or was disposed; it cannot go on.' })
    let next: Promise<SubagentResult>
    try {
      next = Promise.resolve(call())
    } catch (error) {
      next = Promise.reject(error)
    }
    return next.then((value) => { track(value); return value }, (error): SubagentResult => {
      const failed: SubagentResult = { stopReason: 'error', output: '', diagnostic: capDiagnostic(`The child failed: ${describeError(error)}`) }
      track(failed)
      return failed
    })
  }
  const { resume, interrupt, wake, close, checkpoint } = parts
  if (resume) run.resume = (answer) => later(() => resume.call(parts, answer))
  if (wake) run.wake = () => later(() => wake.call(parts))
  if (close) run.close = () => later(() => close.call(parts))
  if (interrupt) run.interrupt = () => { if (!final && !disposal) interrupt.call(parts) }
  if (checkpoint) run.checkpoint = () => checkpoint.call(parts)
  return run
}

function abortedStart(when: string): SubagentError {
  return new SubagentError('ABORTED', `The delegation was aborted ${when}; no child is running.`)
}

function reasonOf(reason: unknown): string | undefined {
  if (reason === undefined) return undefined
  return typeof reason === 'string' ? reason : describeError(reason)
}
