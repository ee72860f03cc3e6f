import { readdir, readFile } from 'node:fs/promises'
import { killCgroup, removeCgroup } from './cgroup.js'

/**
 * Agent process groups of this host: whether one still has a live member, and the safety net
 * that takes every live group down with the host (exit, or a signal nobody else handles).
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
const HANDLED_SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP']

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
  detachSafetyNet()
}

function onExit() {
  killAllGroups()
}

function onSignal(signal: NodeJS.Signals) {
  // Another handler owns this signal (a graceful shutdown, a reload): leave it in control; if
  // it ends the process, the 'exit' handler still runs.
  if (process.listenerCount(signal) > 1) return
  // Only our listener stood between the signal and its default action (terminating the host):
  // kill the agents, drop our listeners, and let the signal do what it would have done.
  killAllGroups()
  process.kill(process.pid, signal)
}

function attachSafetyNet() {
  process.on('exit', onExit)
  for (const signal of HANDLED_SIGNALS) process.on(signal, onSignal)
}

function detachSafetyNet() {
  process.removeListener('exit', onExit)
  for (const signal of HANDLED_SIGNALS) process.removeListener(signal, onSignal)
}

export function registerGroup(pgid: number, cgroup: string | null) {
  if (!liveGroups.size) attachSafetyNet()
  liveGroups.set(pgid, cgroup)
}

export function unregisterGroup(pgid: number) {
  if (!liveGroups.delete(pgid)) return
  if (!liveGroups.size) detachSafetyNet()
}
