import { readdir, readFile } from 'node:fs/promises'
import { killWithHost } from '@cordis-subagents/shared'
import { killCgroup, removeCgroup } from './cgroup.js'

/**
 * Agent process groups of this host: whether one still has a live member, and the groups shared's `killWithHost` net
 * takes down with the host (exit, or a signal nobody else handles).
 */

/**
 * Whether the group has a live (non-zombie) member. On Linux this reads /proc, because an
 * orphaned grandchild stays a zombie until init reaps it and `kill(-pgid, 0)` counts zombies.
 */
export async function groupAlive(pgid: number): Promise<boolean> {
  // Fast path: no member at all (not even a zombie) needs no /proc scan.
  try {
    process.kill(-pgid, 0)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false
  }
  if (process.platform === 'linux') {
    try {
      return await groupAliveProc(pgid)
    } catch {
      // fall through to kill(0)
    }
  }
  try {
    process.kill(-pgid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

async function groupAliveProc(pgid: number): Promise<boolean> {
  const entries = await readdir('/proc')
  const checks = entries.filter((entry) => /^\d+$/.test(entry)).map(async (entry) => {
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8')
      // pid (comm) state ppid pgrp ...; comm may contain spaces and parentheses.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      const state = fields[0]
      return Number(fields[2]) === pgid && state !== 'Z' && state !== 'X'
    } catch {
      return false
    }
  })
  return (await Promise.all(checks)).some(Boolean)
}

// ---------------------------------------------------------------------------------------------
// Safety net: no agent process group outlives the host process.

/** Process-group id → the group's cgroup (or null). */
const liveGroups = new Map<number, string | null>()
/** While a group lives: shared's net that kills them all when the host goes without tearing them down. */
let release: (() => void) | undefined

/** Process-group ids of agent processes not yet torn down (all plugin instances). */
export function liveProcessGroups(): number[] {
  return [...liveGroups.keys()]
}

function killAllGroups() {
  for (const [pgid, cgroup] of liveGroups) {
    if (cgroup) {
      killCgroup(cgroup)
      // Usually still busy this instant; the next host's probe removes it once empty.
      removeCgroup(cgroup)
    }
    try {
      process.kill(-pgid, 'SIGKILL')
    } catch {
      // already gone
    }
  }
  liveGroups.clear()
  release = undefined
}

export function registerGroup(pgid: number, cgroup: string | null) {
  if (!liveGroups.size) release = killWithHost(killAllGroups)
  liveGroups.set(pgid, cgroup)
}

export function unregisterGroup(pgid: number) {
  if (!liveGroups.delete(pgid) || liveGroups.size) return
  release?.()
  release = undefined
}
