import { randomUUID } from 'node:crypto'
import type { Task } from '@a2a-js/sdk'
import type postgres from 'postgres'
import { CROSSING_KEY } from '@cordis-subagents/shared'
import { decodeTask, encodeTask } from './task-codec.js'
import { FINAL_STATES, type SharedNames, STATE } from './shared-schema.js'

type Sql = postgres.Sql

/** Most tasks one reap marks failed (the next reap takes the rest). */
const REAP_BATCH = 200
/** Code in the final status metadata of a task whose host was lost. */
const HOST_LOST = 'HOST_LOST'
/** Code of a task whose run ended on its host but whose final state was never saved. */
const STATE_LOST = 'STATE_LOST'

/**
 * This host's lease in the shared store: a row renewed every third of `leaseMs`, by the
 * database's clock (hosts' clocks may differ). A task is owned by the lease that ran it; when a
 * lease is not renewed in time (the host died, hung, or lost the database), any host's reaper
 * marks its unfinished tasks failed. A lease found expired at renewal is lost for good: the host
 * must stop its tasks (they were, or are about to be, failed) and take a new lease (a new id).
 */
export class HostLease {
  id: string

  constructor(private readonly sql: Sql, private readonly names: SharedNames, readonly name: string, readonly leaseMs: number) {
    this.id = newId(name)
  }

  async register(): Promise<void> {
    await this.sql.unsafe(`INSERT INTO ${this.names.hosts} (id, name, lease_until) VALUES ($1, $2, now() + $3 * interval '1 millisecond')`,
      [this.id, this.name, this.leaseMs])
  }

  /** Renews the lease; false when it had already expired (then `renewLost` takes a new one). */
  async renew(): Promise<boolean> {
    const rows = await this.sql.unsafe(`UPDATE ${this.names.hosts} SET lease_until = now() + $2 * interval '1 millisecond'
      WHERE id = $1 AND lease_until > now() RETURNING id`, [this.id, this.leaseMs])
    return rows.length > 0
  }

  /** A new lease after the old one was lost (tasks of the old one are not this lease's). */
  async renewLost(): Promise<void> {
    this.id = newId(this.name)
    await this.register()
  }

  /** Ends the lease at a clean stop: a task this host still held (not finished) is failed by the next reap. */
  async release(): Promise<void> {
    await this.sql.unsafe(`DELETE FROM ${this.names.hosts} WHERE id = $1`, [this.id])
  }

  /**
   * Marks failed every unfinished task whose lease ended (expired, or released), and a task no
   * host ever owned that did not move for a lease. Each task is updated only if it did not change
   * since it was read (its version), so reapers on several hosts fail it once. Returns how many.
   */
  async reap(): Promise<number> {
    const { tasks, hosts } = this.names
    const rows = await this.sql.unsafe(`SELECT t.tenant, t.scope, t.id, t.version, t.owner, t.task::text AS task FROM ${tasks} t
      LEFT JOIN ${hosts} h ON h.id = t.owner
      WHERE t.state NOT IN (${FINAL_STATES.join(', ')})
        AND (CASE WHEN t.owner IS NULL THEN t.updated_at < now() - $1 * interval '1 millisecond' ELSE h.id IS NULL OR h.lease_until < now() END)
      LIMIT ${REAP_BATCH}`, [this.leaseMs])
    let reaped = 0
    for (const row of rows) reaped += await this.fail(row, lostTask(decodeTask(row.task as string), row.owner as string | null))
    // Host rows long expired and holding no unfinished task are history.
    await this.sql.unsafe(`DELETE FROM ${hosts} h WHERE h.lease_until < now() - $1 * interval '10 millisecond'
      AND NOT EXISTS (SELECT 1 FROM ${tasks} t WHERE t.owner = h.id AND t.state NOT IN (${FINAL_STATES.join(', ')}))`, [this.leaseMs])
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
      reaped += await this.fail(row, endedTask(decodeTask(row.task as string), this.name))
    }
    return reaped
  }

  /** Saves `failed` over the row if it did not change since it was read; 1 when it did. */
  private async fail(row: Row, failed: Task): Promise<number> {
    const done = await this.sql.unsafe(`WITH failed AS (
        UPDATE ${this.names.tasks} SET task = ($5::text)::jsonb, state = $6, status_at = now(), version = version + 1, updated_at = now()
        WHERE tenant = $1 AND scope = $2 AND id = $3 AND version = $4 RETURNING version)
      SELECT pg_notify($7, version::text || ' ' || $8) FROM failed`,
    [row.tenant, row.scope, row.id, row.version, encodeTask(failed), STATE.FAILED, this.names.taskChannel,
      JSON.stringify([row.tenant, row.scope, row.id])] as never[])
    return done.length
  }
}

type Row = Record<string, unknown>

function newId(name: string): string {
  return `${name}#${randomUUID().slice(0, 8)}`
}

/** The task, failed: its host is gone, and with it the run (nothing resumes it elsewhere). */
function lostTask(task: Task, owner: string | null): Task {
  const host = owner ? owner.slice(0, owner.lastIndexOf('#')) || owner : undefined
  const text = host
    ? `The host ${host} that ran this task stopped renewing its lease (it died, hung or lost the database) before the task ended. The task did not finish and was not resumed elsewhere: send it again.`
    : 'No host took this task within a lease (it was never started). Send it again.'
  return failedTask(task, text, HOST_LOST, host)
}

/** The task, failed: its run ended on its host, but the end was never saved (a database error then). */
function endedTask(task: Task, host: string): Task {
  const text = `The host ${host} ran this task, but its final state could not be saved (the database failed then), so how it ended is unknown. Send it again if you need its answer.`
  return failedTask(task, text, STATE_LOST, host)
}

function failedTask(task: Task, text: string, code: string, host: string | undefined): Task {
  task.status = {
    state: STATE.FAILED,
    timestamp: new Date().toISOString(),
    message: {
      messageId: randomUUID(), contextId: task.contextId, taskId: task.id, role: 2 /* ROLE_AGENT */,
      parts: [{ content: { $case: 'text', value: text }, mediaType: 'text/plain', filename: '', metadata: undefined }],
      metadata: undefined, extensions: [], referenceTaskIds: [],
    },
  }
  const ours = task.metadata?.[CROSSING_KEY]
  task.metadata = { ...task.metadata, [CROSSING_KEY]: { ...isRecord(ours) ? ours : {}, stopReason: 'error', code, ...host ? { host } : {} } }
  task.history = [...task.history ?? [], task.status.message!]
  return task
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === 'object' && !Array.isArray(value)
}
