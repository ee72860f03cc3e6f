/**
 * The process groups of stdio servers still running. They run detached (own group), so nothing else would stop
 * them: a safety net SIGKILLs them when the host goes without unloading. It is on `process` only while a group lives:
 * - `exit` (an uncaught error, `process.exit()`);
 * - SIGINT, SIGTERM, SIGHUP that nobody else handles (a closed terminal, a bare `kill`): a signal's default action
 *   ends the process without running `exit` handlers, so the net kills the groups, steps aside and re-raises the signal.
 * The rule is provider-acp's for its agent groups (its `containment/groups.ts`); see `onSignal` for how the two meet.
 */
const live = new Set<number>()
const HANDLED_SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP']

function killAll() {
  for (const pgid of live) {
    try {
      process.kill(-pgid, 'SIGKILL')
    } catch {
      // already gone
    }
  }
  live.clear()
  detach()
}

function onSignal(signal: NodeJS.Signals) {
  // Prepended, so this runs before the signal's other listeners. When there are any, step aside for this emission:
  // an owner (a graceful shutdown, a reload) stays in control, and its stop unloads the servers (or `exit` kills them).
  // Another net such as provider-acp's leaves a signal to whoever else listens: with this one gone it finds itself
  // alone, drops its listeners and re-raises the signal, which then ends the host at once. Its dropping the last
  // listener of the signal is the cue: the servers are killed right then, before the signal comes back.
  if (process.listenerCount(signal) > 1) {
    process.removeListener(signal, onSignal)
    const watch = (event: string | symbol) => { if (event === signal && !process.listenerCount(signal)) killAll() }
    process.on('removeListener', watch)
    queueMicrotask(() => {
      process.removeListener('removeListener', watch)
      if (live.size && !process.listeners(signal).includes(onSignal)) process.prependListener(signal, onSignal)
    })
    return
  }
  // Only this listener stood between the signal and its default action (ending the host): kill the servers, drop
  // the listeners and let the signal do what it would have done.
  killAll()
  process.kill(process.pid, signal)
}

function attach() {
  process.on('exit', killAll)
  for (const signal of HANDLED_SIGNALS) process.prependListener(signal, onSignal)
}

function detach() {
  process.removeListener('exit', killAll)
  for (const signal of HANDLED_SIGNALS) process.removeListener(signal, onSignal)
}

export function trackGroup(pgid: number): () => void {
  if (process.platform === 'win32') return () => {}
  if (!live.size) attach()
  live.add(pgid)
  return () => {
    if (!live.delete(pgid)) return
    if (!live.size) detach()
  }
}

/** Groups tracked now (for tests). */
export function liveServerGroups(): number[] {
  return [...live]
}
