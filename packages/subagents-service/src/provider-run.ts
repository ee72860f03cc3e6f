import { capDiagnostic } from './diagnostic.js'
import { describeError } from '@cordis-subagents/shared'
import { SubagentError } from './errors.js'
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
 * - drops updates sent after the result settled.
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
  const tools: ProviderRunTools = {
    signal,
    update: (update) => {
      if (!settled) request.onUpdate?.(update)
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
    signal.removeEventListener('abort', onAbort)
    settle(value)
  }
  let cancelled = false
  const cancel = (reason?: string) => {
    if (cancelled || settled) return
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
  return run
}

function abortedStart(when: string): SubagentError {
  return new SubagentError('ABORTED', `The delegation was aborted ${when}; no child is running.`)
}

function reasonOf(reason: unknown): string | undefined {
  if (reason === undefined) return undefined
  return typeof reason === 'string' ? reason : describeError(reason)
}
