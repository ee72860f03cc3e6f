/**
 * Binds of one fixed address (`host:port`) in turn within the process, so a server reloaded twice at once takes its port.
 */

// Per fixed address, the bind that holds its turn now.
const turns = new Map<string, Promise<void>>()

/**
 * Runs `bind` (listen on `host:port`, and close at once what a stop overtook) once the bind before it on the same fixed
 * address in this process has settled. A server unloaded while it starts and loaded again at once (a quick double reload)
 * has two starts binding one port: the one overtaken still binds, then closes, and the next one, run alone, would fail with
 * EADDRINUSE when it came between the two. In turn, it binds after that close. Port 0 (a free port each time) never waits.
 */
export async function listenInTurn<T>(host: string, port: number, bind: () => Promise<T>): Promise<T> {
  if (!port) return bind()
  const key = `${host}:${port}`
  const before = turns.get(key)
  let done!: () => void
  const mine = new Promise<void>((resolve) => { done = resolve })
  turns.set(key, mine)
  try {
    await before
    return await bind()
  } finally {
    done()
    if (turns.get(key) === mine) turns.delete(key)
  }
}
