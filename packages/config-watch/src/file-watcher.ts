import { type FSWatcher, realpathSync, watch as fsWatch } from 'node:fs'
import { basename, dirname, join } from 'node:path'

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
 * following the old inode and miss every later save. When the file is a symlink, the directory of
 * its target (`realpath`) is watched too, so an edit of the target in place is seen; the target is
 * resolved again after each change. When a watcher fails, all are closed and armed again after
 * `retryDelay`, for as long as this is not closed.
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
  /** Where a symlinked file really is; `watcher` is set when that is another directory. */
  let target: { path: string; dir: string; name: string; watcher?: FSWatcher } | undefined
  let quiet: NodeJS.Timeout | undefined
  let retry: NodeJS.Timeout | undefined
  /** `performance.now()` at the first event since the last call (in-process time: a wall-clock step does not move it). */
  let firstEvent: number | undefined
  let closed = false
  let failed = false

  const fire = () => {
    quiet = undefined
    firstEvent = undefined
    if (closed) return
    retarget()
    onChange()
  }
  const onEvent = (ours: (changed: string) => boolean) => (_event: string, changed: string | Buffer | null) => {
    // An event already queued when the watcher was closed still arrives.
    if (closed) return
    // Other files of the directory (and the loader's `cordis.yml.tmp`) are not ours. Some
    // platforms give no name: then it may be ours.
    if (changed && !ours(String(changed))) return
    const now = performance.now()
    firstEvent ??= now
    clearTimeout(quiet)
    quiet = setTimeout(fire, now - firstEvent >= maxWait ? 0 : options.debounce)
  }
  const closeAll = () => {
    watcher?.close()
    watcher = undefined
    target?.watcher?.close()
    target = undefined
  }
  const fail = (error: unknown) => {
    closeAll()
    if (closed) return
    failed = true
    options.onError?.(error)
    clearTimeout(retry)
    retry = setTimeout(arm, options.retryDelay)
  }
  /** Follows a symlink to its current target (none when the file is not a link, or is missing). */
  function retarget() {
    let path: string | undefined
    let realDir: string | undefined
    try {
      realDir = realpathSync(dir)
      path = realpathSync(file)
    } catch {
      path = undefined
    }
    if (path === (realDir && join(realDir, name))) path = undefined
    if (path === target?.path || !watcher) return
    target?.watcher?.close()
    target = path ? { path, dir: dirname(path), name: basename(path) } : undefined
    if (!target || target.dir === realDir) return
    const { name: targetName } = target
    try {
      target.watcher = watch(target.dir, { persistent: true }, onEvent((changed) => changed === targetName))
      target.watcher.on('error', fail)
    } catch (error) {
      fail(error)
    }
  }
  function arm() {
    retry = undefined
    if (closed) return
    try {
      // A target in the same directory (cordis.yml -> cordis.prod.yml) is seen by this watcher.
      watcher = watch(dir, { persistent: true }, onEvent((changed) => changed === name || (changed === target?.name && !target.watcher)))
      watcher.on('error', fail)
    } catch (error) {
      fail(error)
      return
    }
    retarget()
    if (!watcher) return
    // Saves made while no watcher was armed are not lost: look once.
    if (failed) onEvent(() => true)('rename', name)
    failed = false
  }
  arm()

  return {
    close() {
      closed = true
      clearTimeout(quiet)
      clearTimeout(retry)
      closeAll()
    },
  }
}
