/**
 * The descendants of a child process we started (an ACP agent, a stdio MCP server) that left its process group, found
 * from /proc (Linux) so that teardown stops them with the group. A process that calls `setsid()` or `setpgid()`, and may
 * also have moved itself out of the child's cgroup (root can write its pid into any cgroup), is still found this way
 * while it is a descendant of the child; teardown signals these by pid. One that was double-forked (its parent exited,
 * so it now belongs to init) is not found: a cgroup (provider-acp's containment) is what holds those.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'

/** A process as teardown knows it: its start time (clock ticks since boot) tells it from a later process with the same pid. */
export type Strays = Map<number, string>

/**
 * Descendants looked at, at most: a fork bomb must not make teardown read /proc without end. The
 * scan is synchronous (a few small procfs reads per process, well under a millisecond for an
 * agent with a handful of children; a few ms at this cap), so stdin still closes at once and the
 * scan never waits behind the libuv thread pool on a loaded host.
 */
const MAX_DESCENDANTS = 1024

interface Stat {
  state: string
  ppid: number
  pgrp: number
  start: string
}

function parseStat(text: string): Stat {
  // pid (comm) state ppid pgrp session … starttime (field 22); comm may hold spaces and parentheses.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
  return { state: fields[0], ppid: Number(fields[1]), pgrp: Number(fields[2]), start: fields[19] }
}

async function stat(pid: number): Promise<Stat | undefined> {
  try {
    return parseStat(await readFile(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return undefined
  }
}

function statSync(pid: number): Stat | undefined {
  try {
    return parseStat(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return undefined
  }
}

/** Direct children of `pid`, from every thread's `children` list (a multi-threaded agent may fork from any thread). */
function children(pid: number): number[] {
  let tasks: string[]
  try {
    tasks = readdirSync(`/proc/${pid}/task`)
  } catch {
    return []
  }
  const found: number[] = []
  for (const tid of tasks) {
    let list = ''
    try {
      list = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8')
    } catch {
      // the thread ended meanwhile
    }
    for (const child of list.split(' ')) if (child.trim()) found.push(Number(child))
  }
  return found
}

/**
 * Live descendants of `root` that are not in the process group `pgid`, with their start times.
 * Empty off Linux, or when /proc does not list children (kernels without CONFIG_PROC_CHILDREN).
 */
export function straysOutsideGroup(root: number, pgid: number): Strays {
  const strays: Strays = new Map()
  if (process.platform !== 'linux') return strays
  const queue = [root]
  let seen = 0
  while (queue.length && seen < MAX_DESCENDANTS) {
    for (const pid of children(queue.shift()!)) {
      if (++seen > MAX_DESCENDANTS) break
      queue.push(pid)
      const info = statSync(pid)
      if (info && info.pgrp !== pgid && info.state !== 'Z' && info.state !== 'X') strays.set(pid, info.start)
    }
  }
  return strays
}

/** Whether the stray is still the same live (non-zombie) process. */
export async function strayAlive(pid: number, start: string): Promise<boolean> {
  const info = await stat(pid)
  return !!info && info.start === start && info.state !== 'Z' && info.state !== 'X'
}

/** Signals each stray that is still the same process (and its own group, when it leads one). */
export async function signalStrays(strays: Strays, signal: NodeJS.Signals): Promise<void> {
  await Promise.all([...strays].map(async ([pid, start]) => {
    const info = await stat(pid)
    if (!info || info.start !== start) return
    for (const target of info.pgrp === pid ? [-pid, pid] : [pid]) {
      try {
        process.kill(target, signal)
      } catch {
        // gone meanwhile
      }
    }
  }))
}
