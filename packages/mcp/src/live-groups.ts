import { killWithHost } from '@cordis-subagents/shared'

/**
 * The process groups of stdio servers still running. They run detached (own group), so nothing else would stop
 * them: while one lives, shared's `killWithHost` net SIGKILLs them when the host goes without unloading (`exit`, or a
 * SIGINT, SIGTERM or SIGHUP nobody else handles). provider-acp's agent groups are on the same net.
 */
const live = new Set<number>()
let release: (() => void) | undefined

function killAll(): void {
  for (const pgid of live) {
    try {
      process.kill(-pgid, 'SIGKILL')
    } catch {
      // already gone
    }
  }
  live.clear()
  release = undefined
}

export function trackGroup(pgid: number): () => void {
  if (process.platform === 'win32') return () => {}
  if (!live.size) release = killWithHost(killAll)
  live.add(pgid)
  return () => {
    if (!live.delete(pgid) || live.size) return
    release?.()
    release = undefined
  }
}

/** Groups tracked now (for tests). */
export function liveServerGroups(): number[] {
  return [...live]
}
