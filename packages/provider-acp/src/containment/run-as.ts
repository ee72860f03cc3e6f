/**
 * `runAs`: the agent runs as an unprivileged user when the host runs as root. As root, an agent
 * can leave any containment (write its pid into another cgroup, kill the host, change anything on
 * the machine); as an unprivileged user it cannot move itself out of its run's cgroup, whose
 * ancestors' `cgroup.procs` only root may write.
 */
import { execFileSync } from 'node:child_process'
import type { Logger } from 'cordis'
import { findExecutable } from './cgroup.js'
import { AcpError } from '../errors.js'
import { isCount } from '@cordis-subagents/shared'

export interface RunAs {
  uid: number
  gid: number
  /**
   * `setpriv` (util-linux), which drops to the user after the cgroup wrapper (as root) entered the
   * run's cgroup. Without a cgroup the switch is Node's own (`spawn`'s `uid`/`gid`).
   */
  setpriv?: string
}

const SEARCH_PATH = '/usr/sbin:/usr/bin:/sbin:/bin'

/** `id -u name` / `id -g name` (the system's user database, NSS included); undefined when unknown. */
function lookUp(flag: '-u' | '-g', user: string): number | undefined {
  try {
    const out = execFileSync('id', [flag, '--', user], { encoding: 'utf8', timeout: 5000, stdio: ['ignore', 'pipe', 'ignore'], env: { PATH: SEARCH_PATH } })
    const id = Number(out.trim())
    return isCount(id) ? id : undefined
  } catch {
    return undefined
  }
}

/**
 * Resolves `runAs` at load: a user name, a uid, or `uid:gid`. Throws `ACP_INVALID_CONFIG` for an
 * unknown user, root, a host that cannot switch users, or a cgroup host without `setpriv`.
 * `inCgroup()`: runs will be contained in a cgroup (containment `auto` and a writable cgroup v2), so setpriv is needed.
 */
export function resolveRunAs(value: unknown, inCgroup: () => boolean): RunAs | undefined {
  if (value === undefined) return undefined
  const where = 'provider-acp: config.runAs'
  if (typeof value !== 'string' || !/^[A-Za-z0-9._][A-Za-z0-9._-]{0,63}(:\d{1,10})?$/.test(value)) {
    throw new AcpError('ACP_INVALID_CONFIG', `${where} must be a user name, a uid, or uid:gid (got ${JSON.stringify(value)}).`)
  }
  if (typeof process.getuid !== 'function') {
    throw new AcpError('ACP_INVALID_CONFIG', `${where} needs a POSIX host (it switches the agent's user).`)
  }
  const [user, group] = value.split(':')
  const uid = /^\d+$/.test(user) ? Number(user) : lookUp('-u', user)
  const gid = group !== undefined ? Number(group) : lookUp('-g', user)
  if (uid === undefined || !Number.isSafeInteger(uid)) {
    throw new AcpError('ACP_INVALID_CONFIG', `${where} names the user ${JSON.stringify(user)}, which this system does not know. Create it, or give uid:gid.`)
  }
  if (gid === undefined || !Number.isSafeInteger(gid)) {
    throw new AcpError('ACP_INVALID_CONFIG', `${where}: the group of ${JSON.stringify(user)} is unknown. Give it as uid:gid.`)
  }
  if (uid === 0) {
    throw new AcpError('ACP_INVALID_CONFIG', `${where} must name an unprivileged user, not root (uid 0): as root the agent can leave any containment.`)
  }
  const hostUid = process.getuid()
  if (hostUid === uid && process.getgid?.() === gid) return undefined
  if (hostUid !== 0) {
    throw new AcpError('ACP_INVALID_CONFIG',
      `${where} (${value}) needs the host to run as root to switch users, and it runs as uid ${hostUid}. Run the host as that user instead, or remove runAs.`)
  }
  const runAs: RunAs = { uid, gid }
  if (inCgroup()) {
    const setpriv = findExecutable('setpriv', { PATH: process.env.PATH ? `${process.env.PATH}:${SEARCH_PATH}` : SEARCH_PATH }, '/')
    if (!setpriv) {
      throw new AcpError('ACP_INVALID_CONFIG',
        `${where} with cgroup containment needs setpriv (util-linux), which is not installed. Install util-linux, or set containment: process-group.`)
    }
    runAs.setpriv = setpriv
  }
  return runAs
}

/** The command line that enters the user from inside the cgroup wrapper: `setpriv … -- command args`. */
export function setprivArgs(setpriv: string, runAs: RunAs, command: string, args: string[]): { command: string; args: string[] } {
  return {
    command: setpriv,
    args: [`--reuid=${runAs.uid}`, `--regid=${runAs.gid}`, '--clear-groups', '--no-new-privs', '--', command, ...args],
  }
}

let warned = false

/** Once per host process: the host is root and an agent will run as root too. */
export function warnIfRoot(logger: Logger, providerName: string, runAs: RunAs | undefined) {
  if (warned || runAs || typeof process.getuid !== 'function' || process.getuid() !== 0) return
  warned = true
  logger.warn('%s: this host runs as root and runAs is not set, so ACP agents run as root: an agent can leave its cgroup '
    + '(write its pid into another cgroup), signal the host, and change anything on this machine. Set runAs to an unprivileged '
    + 'user (for example runAs: nobody, with env.HOME set to a directory it owns), or run the host as an unprivileged user. '
    + 'See "Containment: what can escape" in the provider-acp README.', providerName)
}
