import { randomInt, randomUUID } from 'node:crypto'
import type { Task } from '@a2a-js/sdk'
import type postgres from 'postgres'
import { taskPayload } from './feed-payloads.js'
import { endedTask, expiredTask, interruptedTask, lostTask, resumedTask } from './lost-tasks.js'
import { decodeTask, encodeTask } from './task-codec.js'
import { FINAL_STATES, RUNNING_STATES, type SharedNames, STATE } from './shared-schema.js'

type Sql = postgres.Sql

/** Most tasks one reap changes (the next reap takes the rest). */
const REAP_BATCH = 200

/**
 * Whether the lease `h` (a row of the hosts table, or none) is gone: expired, released, or its
 * host's database session ended (the session-level advisory lock it holds is released by
 * PostgreSQL the moment the session ends: a killed process's socket closes at once). A lock
 * taken before the database server started last was lost to its restart, not to its host's
 * death: then only the lease tells (the host takes its lock again at its next renewal).
 */
export function leaseGone(names: SharedNames, h = 'h'): string {
  return `(${h}.id IS NULL OR ${h}.lease_until < now() OR (${h}.lock_key IS NOT NULL AND ${h}.locked_at > pg_postmaster_start_time()
    AND NOT EXISTS (SELECT 1 FROM pg_locks l
    WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND l.classid = ${names.lockSpace}::oid AND l.objid = ${h}.lock_key::oid)))`
}

/**
 * This host's lease in the shared store: a row renewed every third of `leaseMs`, by the
 * database's clock (hosts' clocks may differ), plus a session-level advisory lock held on a
 * connection of its own, so its death is seen at once rather than when the lease runs out. A task
 * is owned by the lease that ran it; when the lease is gone, any host's reaper acts for its tasks
 * (interrupted, failed, or left for any host to continue: see `reap`). A lease found expired (or
 * its lock lost) at renewal is lost for good: the host stops its tasks and takes a new lease.
 */
export class HostLease {
  id: string
  private lockKey = 0

  /** `lock` is a one-connection client of its own: its session holds the lock (it reconnects without it after a break). */
  constructor(
    private readonly sql: Sql, private readonly lock: Sql, private readonly names: SharedNames,
    readonly name: string, readonly leaseMs: number,
  ) {
    this.id = newId(name)
  }

  /** Takes the lock, then the lease row: a row never names a lock not yet held. */
  async register(): Promise<void> {
    this.lockKey = randomInt(1, 2 ** 31 - 1)
    await this.lock.unsafe(`SELECT pg_advisory_lock(${this.names.lockSpace}, $1)`, [this.lockKey])
    await this.sql.unsafe(`INSERT INTO ${this.names.hosts} (id, name, lease_until, lock_key, locked_at)
      VALUES ($1, $2, now() + $3 * interval '1 millisecond', $4, now())`, [this.id, this.name, this.leaseMs, this.lockKey])
  }

  /** Renews the lease, on the lock's session, which must still hold the lock; false when it was lost. */
  async renew(): Promise<boolean> {
    const rows = await this.lock.unsafe(`UPDATE ${this.names.hosts} SET lease_until = now() + $2 * interval '1 millisecond'
      WHERE id = $1 AND lease_until > now() AND EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()
        AND classid = ${this.names.lockSpace}::oid AND objid = $3::oid AND objsubid = 2) RETURNING id`, [this.id, this.leaseMs, this.lockKey])
    return rows.length > 0 || this.relock()
  }

  /**
   * The lock was lost to a restart of the database server (taken before it started), while the
   * lease still runs: no host counted this lease as gone, so it is kept, with the same lock taken
   * again. Any other loss of the lock (this host's session alone ended) loses the lease.
   */
  private async relock(): Promise<boolean> {
    const [row] = await this.sql.unsafe(`SELECT (lease_until > now() AND locked_at < pg_postmaster_start_time()) AS restarted
      FROM ${this.names.hosts} WHERE id = $1`, [this.id])
    if (!row?.restarted) return false
    const [taken] = await this.lock.unsafe(`SELECT pg_try_advisory_lock(${this.names.lockSpace}, $1) AS ok`, [this.lockKey])
    if (!taken?.ok) return false
    const kept = await this.lock.unsafe(`UPDATE ${this.names.hosts} SET locked_at = now(), lease_until = now() + $2 * interval '1 millisecond'
      WHERE id = $1 AND lease_until > now() RETURNING id`, [this.id, this.leaseMs])
    return kept.length > 0
  }

  /**
   * A lease that ran out while its host was paused (stopped, frozen, starved) but whose lock this
   * session still holds: renewed under the same id, so the tasks no other host took meanwhile stay
   * this host's (see `keep`). False when the lock is gone or the row was removed.
   */
  async revive(): Promise<boolean> {
    const rows = await this.lock.unsafe(`UPDATE ${this.names.hosts} SET lease_until = now() + $2 * interval '1 millisecond'
      WHERE id = $1 AND EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()
        AND classid = ${this.names.lockSpace}::oid AND objid = $3::oid AND objsubid = 2) RETURNING id`, [this.id, this.leaseMs, this.lockKey])
    return rows.length > 0
  }

  /**
   * Whether a task running (or waiting) here is still this lease's after a revival: false when
   * another host continued it or it ended meanwhile (its run here must stop). A turn a reaper marked
   * interrupted meanwhile is marked working again: it runs on here.
   */
  async keep(ref: { tenant: string; scope: string; id: string }): Promise<boolean> {
    const [row] = await this.sql.unsafe(`SELECT tenant, scope, id, version, owner, state, task::text AS task FROM ${this.names.tasks}
      WHERE tenant = $1 AND scope = $2 AND id = $3`, [ref.tenant, ref.scope, ref.id])
    if (!row || row.owner !== this.id || (FINAL_STATES as readonly number[]).includes(row.state as number)) return false
    const task = decodeTask(row.task as string)
    const ours = task.metadata?.cordisSubagents as { stopReason?: unknown } | undefined
    if (row.state !== STATE.INPUT_REQUIRED || ours?.stopReason !== 'interrupted') return true
    return await this.write(row, resumedTask(task, this.name), this.id) > 0
  }

  /** A new lease (and lock) after the old one was lost: tasks of the old one are not this lease's. */
  async renewLost(): Promise<void> {
    await this.lock.unsafe(`SELECT pg_advisory_unlock(${this.names.lockSpace}, $1)`, [this.lockKey]).catch(() => {})
    this.id = newId(this.name)
    await this.register()
  }

  /** Ends the lease at a clean stop (the lock's client is closed by the shared state). Waiting tasks stay for any host. */
  async release(): Promise<void> {
    await this.sql.unsafe(`DELETE FROM ${this.names.hosts} WHERE id = $1`, [this.id])
    await this.lock.unsafe(`SELECT pg_advisory_unlock(${this.names.lockSpace}, $1)`, [this.lockKey]).catch(() => {})
  }

  /**
   * Acts for the unfinished tasks whose lease is gone: a task mid-turn becomes `interrupted`
   * (input-required) when its turn's start was saved, else `failed` (HOST_LOST); a task waiting for
   * an answer stays as it is (any host continues it) until `parkedTimeout` after its last update,
   * then it is canceled. A task no host ever owned that did not move for a lease is failed. Each
   * change is made only if the task did not change since it was read (its version), so reapers on
   * several hosts act once. `only` limits it to one task (a request found it). Returns how many.
   */
  async reap(parkedTimeout: number, only?: { tenant: string; scope: string; id: string }): Promise<number> {
    const { tasks, hosts, turns } = this.names
    const values: unknown[] = [this.leaseMs, parkedTimeout]
    const one = only ? `AND t.tenant = $${values.push(only.tenant)} AND t.scope = $${values.push(only.scope)} AND t.id = $${values.push(only.id)}` : ''
    const rows = await this.sql.unsafe(`SELECT t.tenant, t.scope, t.id, t.version, t.owner, t.state, t.task::text AS task,
        (s.id IS NOT NULL) AS saved FROM ${tasks} t
      LEFT JOIN ${hosts} h ON h.id = t.owner
      LEFT JOIN ${turns} s ON s.tenant = t.tenant AND s.scope = t.scope AND s.id = t.id
      WHERE t.state NOT IN (${FINAL_STATES.join(', ')}) ${one}
        AND (CASE WHEN t.state = ${STATE.INPUT_REQUIRED} THEN (t.owner IS NULL OR ${leaseGone(this.names)})
            AND (s.id IS NULL OR ($2 > 0 AND t.updated_at < now() - $2 * interval '1 millisecond'))
          WHEN t.owner IS NULL THEN t.state IN (${RUNNING_STATES.join(', ')}) AND t.updated_at < now() - $1 * interval '1 millisecond'
          ELSE ${leaseGone(this.names)} END)
      LIMIT ${REAP_BATCH}`, values as never[])
    let reaped = 0
    for (const row of rows) {
      const task = decodeTask(row.task as string)
      const owner = row.owner as string | null
      // Waiting, saved (the query chose only the expired ones), whoever held it.
      if (row.state === STATE.INPUT_REQUIRED && row.saved) reaped += await this.write(row, expiredTask(task, owner, parkedTimeout), null)
      else if (row.saved && owner) reaped += await this.write(row, interruptedTask(task, owner), owner)
      else reaped += await this.write(row, lostTask(task, owner), owner)
    }
    // Host rows long expired and holding no unfinished task are history.
    if (!only) {
      await this.sql.unsafe(`DELETE FROM ${hosts} h WHERE h.lease_until < now() - $1 * interval '10 millisecond'
        AND NOT EXISTS (SELECT 1 FROM ${tasks} t WHERE t.owner = h.id AND t.state NOT IN (${FINAL_STATES.join(', ')}))`, [this.leaseMs])
    }
    return reaped
  }

  /**
   * Unfinished tasks of this lease that no longer run (nor wait) here: their final state was lost
   * (a database error while saving it), so nothing would ever end them. Failed, saying so.
   */
  async reapOwn(runsHere: (ref: { tenant: string; scope: string; id: string }) => boolean): Promise<number> {
    const rows = await this.sql.unsafe(`SELECT tenant, scope, id, version, owner, task::text AS task FROM ${this.names.tasks}
      WHERE owner = $1 AND state NOT IN (${FINAL_STATES.join(', ')}) AND updated_at < now() - interval '5 seconds' LIMIT ${REAP_BATCH}`, [this.id])
    let reaped = 0
    for (const row of rows) {
      if (runsHere(row as never)) continue
      reaped += await this.write(row, endedTask(decodeTask(row.task as string), this.name), row.owner as string)
    }
    return reaped
  }

  /** Saves `task` over the row (owner `owner`) if it did not change since it was read; 1 when it did. */
  private async write(row: Row, task: Task, owner: string | null): Promise<number> {
    const done = await this.sql.unsafe(`WITH saved AS (
        UPDATE ${this.names.tasks} SET task = ($5::text)::jsonb, state = $6, owner = $9, status_at = now(), version = version + 1, updated_at = now()
        WHERE tenant = $1 AND scope = $2 AND id = $3 AND version = $4 RETURNING version)
      SELECT pg_notify($7, $8) FROM saved`,
    [row.tenant, row.scope, row.id, row.version, encodeTask(task), task.status!.state, this.names.taskChannel,
      taskPayload({ tenant: row.tenant as string, scope: row.scope as string, id: row.id as string }), owner] as never[])
    return done.length
  }
}

type Row = Record<string, unknown>

function newId(name: string): string {
  return `${name}#${randomUUID().slice(0, 8)}`
}
