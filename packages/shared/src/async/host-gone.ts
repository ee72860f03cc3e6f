/**
 * One safety net for what must not outlive the host process (detached process groups: ACP agents, stdio MCP servers).
 * While something is registered, it is on `process`:
 * - `exit` (an uncaught error, `process.exit()`): every registered kill runs;
 * - SIGINT, SIGTERM, SIGHUP that nobody else handles (a closed terminal, a bare `kill`): a signal's default action ends
 *   the process without running `exit` handlers, so the net runs every kill, steps aside and re-raises the signal.
 * A signal another listener handles (a graceful shutdown, a reload) is left to it: its stop unloads what it started,
 * or `exit` runs the kills. One net for every package: two nets would each see the other as the signal's owner.
 */
const kills = new Set<() => void>()
const SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP']

function killAll(): void {
  const all = [...kills]
  kills.clear()
  detach()
  for (const kill of all) {
    try {
      kill()
    } catch {
      // a kill must not keep the others from running
    }
  }
}

function onSignal(signal: NodeJS.Signals): void {
  if (process.listenerCount(signal) > 1) return
  killAll()
  process.kill(process.pid, signal)
}

function attach(): void {
  process.on('exit', killAll)
  for (const signal of SIGNALS) process.on(signal, onSignal)
}

function detach(): void {
  process.removeListener('exit', killAll)
  for (const signal of SIGNALS) process.removeListener(signal, onSignal)
}

/**
 * Runs `kill` (synchronously: at `exit` nothing asynchronous runs) if the host goes by `exit` or by a signal nobody
 * handles, until the returned function is called. Nothing on Windows (no process groups to kill).
 */
export function killWithHost(kill: () => void): () => void {
  if (process.platform === 'win32') return () => {}
  if (!kills.size) attach()
  kills.add(kill)
  return () => {
    if (kills.delete(kill) && !kills.size) detach()
  }
}
