import type { GroupCommit } from './group-commit.js'
import type { RunCount } from './run-count.js'
import type { RunLog } from './run-log.js'
import type { DirectWriter } from './write-ops.js'

/**
 * How long a stop waits for what the store queued (and a count it is taking) before it ends the writer
 * thread anyway: a database that does not answer never holds a stop, or the process, forever.
 */
export const STOP_WRITES_MS = 5000

export interface OpenParts {
  writes?: GroupCommit
  count: RunCount
  writer?: DirectWriter
  log?: RunLog
}

/**
 * A store's stop: writes what it queued (bounded by `ms`, STOP_WRITES_MS unless a test lowers it; past it, `warn` says
 * so and the writer thread is ended at once), then ends the writer thread and closes the run log. What the run log
 * holds and the database did not get is written again by the next start of the file.
 */
export async function stopStore(parts: OpenParts, warn: (message: string) => void, ms = STOP_WRITES_MS): Promise<void> {
  const { writes, count, writer, log } = parts
  let timer: NodeJS.Timeout | undefined
  try {
    const written = await Promise.race([
      // Either failing (a write is reported where it fails) still ends the writer thread.
      Promise.all([writes?.close(), count.settled()]).then(() => true, () => true),
      new Promise<false>((resolve) => { timer = setTimeout(() => resolve(false), ms) }),
    ])
    if (!written) {
      warn(`writes still queued after ${ms} ms at stop (the database does not answer): the writer thread is ended; `
        + 'settled runs in the run log are written by the next start')
    }
    await writer?.close(!written)
  } finally {
    clearTimeout(timer)
    log?.close()
  }
}
