import { describeError } from '@cordis-subagents/shared'
import { capDiagnostic } from '../diagnostic.js'
import type { SubagentResult, SubagentRun } from '../types.js'

// A reattach by task key after a restart that finds the task's run interrupted (its host died
// mid-turn): the re-run task call wants the task's answer, and nobody else would wake the run.

/** The message a woken run gets as its next turn (its transcript holds the task and its completed turns). */
export const CONTINUE_AFTER_RESTART = 'Your host restarted while you were working on this task, and the turn in flight was lost. '
  + 'Continue the task from where your last completed step left off, and give your final answer.'

/**
 * The restored run, woken at once when it comes back `interrupted`: a new turn on
 * `CONTINUE_AFTER_RESTART`, whose outcome is the run's first result. A run its provider cannot
 * wake (no `send` / `wake`), or that fails to wake, ends `error` saying so: never an idle run
 * nobody wakes. Any other first result (a parked run's `pending`) is passed on as it is.
 */
export async function wokenOnReattach(started: Promise<SubagentRun>, runId: string): Promise<SubagentRun> {
  const run = await started
  const result = Promise.resolve(run.result).then((first) => first?.stopReason === 'interrupted' ? wake(run, first, runId) : first)
  return withResult(run, result)
}

async function wake(run: SubagentRun, first: SubagentResult, runId: string): Promise<SubagentResult> {
  const failed = (why: string): SubagentResult => ({
    stopReason: 'error',
    output: first.output ?? '',
    diagnostic: capDiagnostic(`Run ${runId} came back interrupted after a restart and ${why}; delegate without reattach to start the task afresh.`),
  })
  if (typeof run.send !== 'function' || typeof run.wake !== 'function') return failed('its provider cannot wake it (no send / wake)')
  try {
    run.send(CONTINUE_AFTER_RESTART)
    return await run.wake()
  } catch (error) {
    return failed(`could not be woken: ${describeError(error)}`)
  }
}

/** `run` with `result` in place of its own (its verbs bound to it; no proxy, so private state stays the run's). */
function withResult(run: SubagentRun, result: Promise<SubagentResult>): SubagentRun {
  const wrapped: SubagentRun = {
    id: run.id,
    get childId() { return run.childId },
    get origin() { return run.origin },
    result,
    cancel: (reason) => run.cancel(reason),
    dispose: () => run.dispose(),
  }
  for (const verb of ['send', 'resume', 'interrupt', 'wake', 'close', 'checkpoint'] as const) {
    const method = run[verb]
    if (typeof method === 'function') (wrapped as unknown as Record<string, unknown>)[verb] = method.bind(run)
  }
  return wrapped
}
