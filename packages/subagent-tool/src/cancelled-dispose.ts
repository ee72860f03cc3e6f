import { Logger } from 'cordis'
import type { SubagentHandle } from '@cordis-subagents/subagents-service'
import { describeError } from '@cordis-subagents/shared'

// The dispose of a run its call cancelled (a timeout, the parent's abort, the unload): off a plain delegation's road.

/**
 * How long a cancelled call waits for its run's dispose once the run's result is in. A provider's dispose may wait
 * for work the cancel cannot cut short (provider-spawn waits for a child's tool, which may ignore its abort), and
 * the call must not hang on it: past the grace it returns, and the dispose (so the run's slots) ends in the background.
 */
const CANCELLED_DISPOSE_GRACE_MS = 1_000

let logger: Logger | undefined
// Not the load's `ctx.logger`: a call reaches this from several entries, none of which carries the load's scope.
const log = () => logger ??= new Logger('subagent-tool')

/**
 * `run.dispose()`, or nothing once `graceMs` passed: a failure within the grace rejects (the call reports it, as for
 * any dispose); one after it is logged, as is the grace running out, since nobody waits for it any more.
 */
function disposeWithinGrace(run: SubagentHandle, graceMs = CANCELLED_DISPOSE_GRACE_MS): Promise<void> {
  return new Promise((resolve, reject) => {
    let late = false
    const timer = setTimeout(() => {
      late = true
      log().warn('run %s: its dispose did not end within %d ms of its cancelled result; the call returns, the dispose goes on',
        run.id, graceMs)
      resolve()
    }, graceMs)
    run.dispose().then(() => {
      clearTimeout(timer)
      resolve()
    }, (error: unknown) => {
      clearTimeout(timer)
      if (!late) return reject(error)
      log().warn('run %s: its dispose failed after the call returned: %s', run.id, describeError(error))
    })
  })
}

/** A call waiting for its run's dispose (call.ts): told once the wait is over. */
export interface DisposeWaiter {
  disposed(error?: unknown): void
}

/** Tells `waiter` once `run`'s dispose ended, or the grace passed: the wait of a call that was cancelled. */
export function waitWithinGrace(run: SubagentHandle, waiter: DisposeWaiter): void {
  disposeWithinGrace(run).then(() => waiter.disposed(), (error: unknown) => waiter.disposed(error))
}
