import { connect } from 'node:net'

/** Whether process `pid` is alive (signal 0: nothing is sent). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Whether something accepts connections on 127.0.0.1:`port` now. */
export function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

/**
 * Loads a server with `load()` and unloads it at once, again and again, each time after another wait (so many
 * microtasks, then so many turns of the event loop: a start's own awaits, then its listen), and `settle()`s after each
 * (default: 50 ms); then loads it once more and waits (5 s at most) for it to accept there. Resolves with the waits after
 * which something still accepted connections on `port` (none: `[]`), and whether the last load, the one that stays, took it.
 */
export async function unloadedWhileStarting(
  load: () => { dispose(): unknown }, port: number, settle: () => Promise<unknown> = pause,
): Promise<{ left: string[]; stays: boolean }> {
  const microtasks = Array.from({ length: 12 }, (_, ticks) => ({ ticks, turns: 0 }))
  const waits = [...microtasks, ...[1, 2, 3, 5, 8, 13].map((turns) => ({ ticks: 0, turns }))]
  const left: string[] = []
  for (const { ticks, turns } of waits) {
    const fork = load()
    for (let i = 0; i < ticks; i++) await Promise.resolve()
    for (let i = 0; i < turns; i++) await new Promise((resolve) => setImmediate(resolve))
    fork.dispose()
    await settle()
    if (await accepts(port)) left.push(`${ticks} microtasks, ${turns} turns`)
  }
  load()
  const deadline = performance.now() + 5000
  while (!await accepts(port) && performance.now() < deadline) await pause()
  return { left, stays: await accepts(port) }
}

const pause = () => new Promise((resolve) => setTimeout(resolve, 50))

/**
 * Loads a server with `load()`, unloads it after a wait (so many microtasks, then so many turns of the event loop) and
 * loads it again at once, as a quick double reload does; each time the second load must come to accept on `port`
 * (5 s at most) before it is unloaded too. Resolves with the waits after which the second load never listened (none: `[]`).
 */
export async function reloadedWhileStarting(load: () => { dispose(): unknown }, port: number): Promise<string[]> {
  const failed: string[] = []
  for (const turns of [0, 1, 2, 3, 5, 8, 13, 21]) {
    for (const ticks of [0, 3, 8]) {
      const first = load()
      for (let i = 0; i < ticks; i++) await Promise.resolve()
      for (let i = 0; i < turns; i++) await new Promise((resolve) => setImmediate(resolve))
      first.dispose()
      const second = load()
      const deadline = performance.now() + 5000
      while (!await accepts(port) && performance.now() < deadline) await pause()
      if (!await accepts(port)) failed.push(`${ticks} microtasks, ${turns} turns`)
      second.dispose()
      await pause()
    }
  }
  return failed
}
