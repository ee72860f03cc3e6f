/**
 * The process groups of stdio servers still running. If the host process exits without unloading
 * (an uncaught error, `process.exit()`), its `exit` handler SIGKILLs them: they run detached (own
 * group), so nothing else would stop them. The listener is on `process` only while a group lives.
 */
const live = new Set<number>()

function killAll() {
  for (const pgid of live) {
    try {
      process.kill(-pgid, 'SIGKILL')
    } catch {
      // already gone
    }
  }
  live.clear()
}

export function trackGroup(pgid: number): () => void {
  if (process.platform === 'win32') return () => {}
  if (!live.size) process.on('exit', killAll)
  live.add(pgid)
  return () => {
    if (!live.delete(pgid)) return
    if (!live.size) process.off('exit', killAll)
  }
}

/** Groups tracked now (for tests). */
export function liveServerGroups(): number[] {
  return [...live]
}
