import { type FSWatcher, statSync, watch } from 'node:fs'
import { basename } from 'node:path'
import { type AgentDirectoryWarn, isAgentFileName } from './directory.js'

export interface DirectoryWatchOptions {
  /** Quiet time after the last event before `onChange` runs (ms). */
  debounce: number
  /** Wait before looking for a directory that is gone, or watching again after the watcher failed (ms). */
  retryDelay: number
  onChange: () => void
  warn: AgentDirectoryWarn
}

/** The directory's device, inode and birth time (an inode number is reused at once), or undefined when it is gone. */
function identityOf(dir: string): string | undefined {
  try {
    const stat = statSync(dir, { throwIfNoEntry: false })
    return stat?.isDirectory() ? `${stat.dev}:${stat.ino}:${stat.birthtimeMs}` : undefined
  } catch {
    return undefined
  }
}

/**
 * Calls `onChange` once things are quiet (`debounce` ms) after a `*.md` file of `dir` was written,
 * added, removed or renamed; events for other names (an editor's `.a.md.swp`) are ignored. The
 * directory is watched, not each file: editors save by writing a temporary file and renaming it over
 * the old one, and a watch on the old file would miss every later save.
 *
 * A watch follows an inode, so a directory replaced by a deploy (`rm -rf agents; mv agents.new agents`)
 * would leave it watching nothing: at each event the directory's identity is checked, and when it
 * changed the watch is armed on the new one (`AGENT_DIR_REPLACED`, then `onChange`); when it is gone
 * it is looked for every `retryDelay` (`AGENT_DIR_GONE`). A failed watcher is armed again the same way.
 */
export function watchDirectory(dir: string, options: DirectoryWatchOptions): () => void {
  let watcher: FSWatcher | undefined
  let quiet: NodeJS.Timeout | undefined
  let retry: NodeJS.Timeout | undefined
  let identity: string | undefined
  let closed = false
  const self = basename(dir)
  // Not watching (gone, failed): once armed again, changes made meanwhile are read once.
  let lost = false

  const schedule = () => {
    clearTimeout(quiet)
    quiet = setTimeout(() => {
      quiet = undefined
      if (!closed && stillSame()) options.onChange()
    }, options.debounce)
  }
  const lose = () => {
    watcher?.close()
    watcher = undefined
    lost = true
  }
  const retryLater = () => {
    clearTimeout(retry)
    retry = setTimeout(arm, options.retryDelay)
    // Like the watcher, the retry never keeps a process alive by itself.
    retry.unref()
  }
  const fail = (error: unknown) => {
    if (closed) return
    const first = !lost
    lose()
    if (first) options.warn('AGENT_DIR_WATCH', `watching ${dir} failed (${String(error)}); watching it again in ${options.retryDelay} ms.`)
    retryLater()
  }
  /** Watches again: the directory found now, or, when it is gone, the one put there later. */
  const rearm = () => {
    lose()
    if (identityOf(dir)) return arm()
    options.warn('AGENT_DIR_GONE', `${dir} is gone (removed or renamed); its agents stay defined, and it is looked for every `
      + `${options.retryDelay} ms. Put the directory back to reload them.`)
    retryLater()
  }
  const stillSame = (): boolean => {
    if (identityOf(dir) === identity) return true
    rearm()
    return false
  }
  const onEvent = (_event: string, name: string | Buffer | null) => {
    // An event already queued when the watcher was closed still arrives.
    if (closed || !watcher) return
    // The watched directory itself was removed or moved (its watch has ended even if a new one has the same identity).
    if (name !== null && String(name) === self) return rearm()
    // Any other name costs nothing, not even a look at the directory: a flood of them (a build's output) reads nothing.
    // Some platforms give no name: then it may be an agent file.
    if (name && !isAgentFileName(String(name))) return
    if (!stillSame()) return
    schedule()
  }
  function arm() {
    retry = undefined
    if (closed) return
    const now = identityOf(dir)
    if (!now) {
      lost = true
      return retryLater()
    }
    try {
      // Not persistent: the watcher never keeps a process alive by itself (a CLI app ends when its work does).
      watcher = watch(dir, { persistent: false }, onEvent)
      watcher.on('error', fail)
    } catch (error) {
      return fail(error)
    }
    if (identity !== undefined && now !== identity) {
      options.warn('AGENT_DIR_REPLACED', `${dir} was replaced by a new directory; watching the new one and reading its agents.`)
    }
    identity = now
    if (lost) schedule()
    lost = false
  }
  arm()

  return () => {
    closed = true
    clearTimeout(quiet)
    clearTimeout(retry)
    watcher?.close()
    watcher = undefined
  }
}
