/**
 * Per-run cgroup v2 containment (Linux): every process the agent starts, including ones that
 * leave its process group (`setsid`, a double fork), stays in the run's cgroup, and
 * `cgroup.kill` ends them all. Used where the host may create cgroups below its own
 * (root, or a delegated subtree); otherwise the provider falls back to the process group.
 */
import { accessSync, constants, mkdirSync, opendirSync, readdirSync, readFileSync, rmdirSync, statSync, writeFileSync } from 'node:fs'
import { delimiter, isAbsolute, join, resolve } from 'node:path'

const PREFIX = 'cordis-acp-'
let counter = 0
let base: string | null | undefined

/** The cgroup v2 directory of this process where it may create children, or null. Probed once. */
export function cgroupBase(): string | null {
  if (base !== undefined) return base
  base = null
  if (process.platform !== 'linux') return base
  try {
    const own = readFileSync('/proc/self/cgroup', 'utf8').split('\n').find((line) => line.startsWith('0::'))
    if (!own) return base
    const path = own.slice(3).trim()
    const mount = readFileSync('/proc/self/mountinfo', 'utf8').split('\n')
      .map((line) => line.split(' '))
      .find((fields) => fields[fields.indexOf('-') + 1] === 'cgroup2')
    if (!mount) return base
    const mountRoot = mount[3]
    const mountPoint = mount[4]
    if (path !== mountRoot && !path.startsWith(mountRoot === '/' ? '/' : `${mountRoot}/`)) return base
    const dir = join(mountPoint, mountRoot === '/' ? path : path.slice(mountRoot.length))
    // Moving a process needs write access to cgroup.procs of the common ancestor: our own cgroup.
    accessSync(join(dir, 'cgroup.procs'), constants.W_OK)
    accessSync(dir, constants.W_OK)
    // The wrapper that enters the cgroup before the agent runs.
    accessSync('/bin/sh', constants.X_OK)
    sweepStale(dir)
    base = dir
  } catch {
    base = null
  }
  return base
}

/**
 * Removes the run cgroups left by hosts that died before they could remove them, with the cgroups
 * nested in them (a served host's own runs).
 */
function sweepStale(dir: string) {
  retryDeferredCgroups()
  for (const entry of readdirSync(dir)) {
    const pid = staleOwner(entry)
    if (pid === undefined || pidAlive(pid)) continue
    try {
      // cgroup.kill reaches the nested cgroups too; a tree still busy this instant goes next time.
      killCgroup(join(dir, entry))
      removeTree(join(dir, entry), { entries: MAX_TREE_ENTRIES }, 0)
    } catch {
      // someone else's: leave it
    }
  }
}

/** The host pid of a run cgroup's name `cordis-acp-<pid>-<n>`, else undefined (no regex: plain scanning). */
function staleOwner(name: string): number | undefined {
  if (!name.startsWith(PREFIX) || name.length > PREFIX.length + 40) return undefined
  const [pid, n, ...rest] = name.slice(PREFIX.length).split('-')
  if (rest.length || !digits(pid) || !digits(n)) return undefined
  return Number(pid)
}

function digits(text: string | undefined): text is string {
  if (!text) return false
  for (const char of text) if (char < '0' || char > '9') return false
  return true
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Creates a fresh cgroup for one run; null when that is not possible. */
export function createRunCgroup(): string | null {
  const dir = cgroupBase()
  if (!dir) return null
  const path = join(dir, `${PREFIX}${process.pid}-${++counter}`)
  try {
    // Cheap (one readdir), and keeps the cgroups of hosts killed mid-run from piling up.
    sweepStale(dir)
    mkdirSync(path)
    return path
  } catch {
    return null
  }
}

/** Live members of the cgroup (empty when it is gone). */
function cgroupPids(path: string): number[] {
  try {
    return readFileSync(join(path, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number)
  } catch {
    return []
  }
}

/** Whether any process is left in the cgroup or below it. */
export function cgroupPopulated(path: string): boolean {
  try {
    return /^populated 1$/m.test(readFileSync(join(path, 'cgroup.events'), 'utf8'))
  } catch {
    return false
  }
}

/** Sends `signal` to every member. */
export function signalCgroup(path: string, signal: NodeJS.Signals) {
  for (const pid of cgroupPids(path)) {
    try {
      process.kill(pid, signal)
    } catch {
      // gone meanwhile
    }
  }
}

/** SIGKILLs every member: `cgroup.kill` (Linux 5.14+), else one signal per member. Synchronous. */
export function killCgroup(path: string) {
  try {
    writeFileSync(join(path, 'cgroup.kill'), '1')
  } catch {
    signalCgroup(path, 'SIGKILL')
  }
}

// ---------------------------------------------------------------------------------------------
// Removal. A run's cgroup may hold cgroups nested in it (a served host running its own ACP agent
// makes its runs' cgroups below its own); one that host did not remove (it was SIGKILLed, or its
// rmdir raced its dying child) would keep the run's cgroup from being removed. So removal goes
// depth-first, bottom-up, and removes only cgroups without members (it never kills: that
// happened before). Bounded against hostile nesting: depth and entries read per tree.

/** Nesting depth below a run's cgroup that removal descends to. */
export const MAX_TREE_DEPTH = 8
/** Directory entries (files included) removal reads per tree. */
const MAX_TREE_ENTRIES = 4096
/** Run cgroups this host could not remove yet (kept, oldest first, to retry). */
const MAX_DEFERRED = 64
const deferred: string[] = []

/**
 * Removes the cgroup with the empty cgroups nested in it (bottom-up); false while it, or a cgroup
 * below it, still has a member, or the tree was too deep or too large. Retries deferred ones first.
 */
export function removeCgroup(path: string): boolean {
  retryDeferredCgroups()
  return removeTree(path, { entries: MAX_TREE_ENTRIES }, 0)
}

/** Removes the cgroup, or keeps it on the bounded list retried at the next removal, sweep or stop. */
export function releaseCgroup(path: string) {
  if (removeCgroup(path) || deferred.includes(path)) return
  deferred.push(path)
  if (deferred.length > MAX_DEFERRED) deferred.shift()
}

/** Retries the cgroups that could not be removed before. */
export function retryDeferredCgroups() {
  for (const path of deferred.splice(0)) {
    if (!removeTree(path, { entries: MAX_TREE_ENTRIES }, 0)) deferred.push(path)
  }
}

/** Cgroup paths waiting to be removed (for tests and diagnostics). */
export function deferredCgroups(): string[] {
  return [...deferred]
}

function removeTree(path: string, budget: { entries: number }, depth: number): boolean {
  const children: string[] = []
  try {
    const dir = opendirSync(path)
    try {
      for (let entry = dir.readSync(); entry; entry = dir.readSync()) {
        if (--budget.entries < 0) return false
        if (entry.isDirectory()) children.push(entry.name)
      }
    } finally {
      dir.closeSync()
    }
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT'
  }
  if (children.length && depth >= MAX_TREE_DEPTH) return false
  let empty = true
  for (const child of children) empty = removeTree(join(path, child), budget, depth + 1) && empty
  if (!empty || cgroupPids(path).length) return false
  try {
    rmdirSync(path)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT'
  }
}

/**
 * Finds `command` the way execvp would, on the child's PATH (relative to `cwd` when it has a
 * slash): an executable file, not a directory. Used to keep ENOENT and EACCES reporting exact when
 * the command runs through the cgroup wrapper.
 */
export function findExecutable(command: string, env: Record<string, string>, cwd: string): string | undefined {
  const candidates = command.includes('/')
    ? [isAbsolute(command) ? command : resolve(cwd, command)]
    // Without PATH in the child's env, Node (like execvp) searches a default path.
    : (env.PATH ?? '/usr/bin:/bin').split(delimiter).filter(Boolean).map((dir) => resolve(cwd, dir, command))
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK)
      if (statSync(candidate).isFile()) return candidate
    } catch {
      // next
    }
  }
  return undefined
}

/**
 * argv that enters the cgroup before it runs the agent, so nothing the agent starts can be
 * outside it: `sh -c 'echo $$ > <cgroup>/cgroup.procs; exec "$@"'`. No shell parsing of the
 * command or its arguments happens (they are positional parameters).
 */
export function wrapInCgroup(path: string, command: string, args: string[]): { command: string; args: string[] } {
  return {
    command: '/bin/sh',
    args: ['-c', 'echo $$ > "$0/cgroup.procs" 2>/dev/null; exec "$@"', path, command, ...args],
  }
}

/**
 * The wrapper's own failure to exec the command (a `#!` interpreter that is missing: 127; one that
 * cannot be run: 126), told by its exit code and by its stderr starting with the shell's name (the
 * cgroup path, `$0`) or with setpriv's: the spawn error a direct spawn reports (ENOENT, EACCES).
 */
export function wrapperExecFailure(path: string, exit: { code: number | null }, stderr: string): NodeJS.ErrnoException | undefined {
  if (exit.code !== 126 && exit.code !== 127) return undefined
  if (!stderr.startsWith(`${path}: `) && !stderr.startsWith('setpriv: failed to execute ')) return undefined
  const code = exit.code === 127 ? 'ENOENT' : 'EACCES'
  return Object.assign(new Error(`spawn ${code}`), { code, syscall: 'spawn' })
}
