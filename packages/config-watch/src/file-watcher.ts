import { type FSWatcher, watch as fsWatch } from 'node:fs'
import { basename, dirname } from 'node:path'

export interface FileWatcherOptions {
  /** Quiet time after the last event before `onChange` runs (ms). */
  debounce: number
  /** Wait before watching again after the watcher failed or could not start (ms). */
  retryDelay: number
  /** Told when the watcher failed and will be armed again (for a log line). */
  onError?: (error: unknown) => void
  /** `fs.watch`, replaceable so a test can make a real watcher fail. */
  watch?: typeof fsWatch
}

export interface FileWatcher {
  close(): void
}

/**
 * Calls `onChange` once things are quiet after `file` was written, replaced or removed.
 *
 * It watches the directory, not the file: a rename-save (`sed -i`, vim, most editors' safe write,
 * the loader's own write-back) puts a new inode under the name, and a watch on the file would keep
 * following the old inode and miss every later save. When the watcher fails it is closed and armed
 * again after `retryDelay`, for as long as this is not closed.
 *
 * A steady stream of events (a file rewritten more often than `debounce`) still gets a call at
 * least every `10 × debounce` (and at least once a second).
 */
export function watchFile(file: string, onChange: () => void, options: FileWatcherOptions): FileWatcher {
  const watch = options.watch ?? fsWatch
  const dir = dirname(file)
  const name = basename(file)
  const maxWait = Math.max(options.debounce * 10, 1000)
  let watcher: FSWatcher | undefined
  let quiet: NodeJS.Timeout | undefined
  let retry: NodeJS.Timeout | undefined
  let firstEvent = 0
  let closed = false
  let failed = false

  const fire = () => {
    quiet = undefined
    firstEvent = 0
    if (!closed) onChange()
  }
  const onEvent = (_event: string, changed: string | Buffer | null) => {
    // An event already queued when the watcher was closed still arrives.
    if (closed) return
    // Other files of the directory (and the loader's `cordis.yml.tmp`) are not ours. Some
    // platforms give no name: then it may be ours.
    if (changed && String(changed) !== name) return
    const now = Date.now()
    firstEvent ||= now
    clearTimeout(quiet)
    quiet = setTimeout(fire, now - firstEvent >= maxWait ? 0 : options.debounce)
  }
  const fail = (error: unknown) => {
    watcher?.close()
    watcher = undefined
    if (closed) return
    failed = true
    options.onError?.(error)
    clearTimeout(retry)
    retry = setTimeout(arm, options.retryDelay)
  }
  function arm() {
    retry = undefined
    if (closed) return
    try {
      watcher = watch(dir, { persistent: true }, onEvent)
      watcher.on('error', fail)
    } catch (error) {
      fail(error)
      return
    }
    // Saves made while no watcher was armed are not lost: look once.
    if (failed) onEvent('rename', name)
    failed = false
  }
  arm()

  return {
    close() {
      closed = true
      clearTimeout(quiet)
      clearTimeout(retry)
      watcher?.close()
      watcher = undefined
    },
  }
}
