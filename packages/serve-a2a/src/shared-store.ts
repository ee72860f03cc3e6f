import type { ListTasksRequest, ListTasksResponse, Task } from '@a2a-js/sdk'
import type { ServerCallContext } from '@a2a-js/sdk/server'
import type postgres from 'postgres'
import { taskPayload } from './feed-payloads.js'
import type { TaskRef } from './task-ref.js'
import { decodeTask, encodeTask } from './task-codec.js'
import { boundHistory } from './task-history.js'
import { MAX_LIST_BYTES } from './task-summary.js'
import { FINAL_STATES, RUNNING_STATES, type SharedNames } from './shared-schema.js'
import { scopeOf, type ServeTaskStore } from './task-store.js'

type Sql = postgres.Sql

const DEFAULT_PAGE_SIZE = 50
const MAX_PAGE_SIZE = 100

export function refOf(context: ServerCallContext | undefined, id: string): TaskRef {
  return { tenant: context?.tenant ?? '', scope: scopeOf(context), id }
}

/** The in-process key of a ref (the same as `taskKey`). */
export function keyOfRef(ref: TaskRef): string {
  return `${ref.tenant}\u0000${ref.scope}\u0000${ref.id}`
}

export interface PostgresTaskStoreOptions {
  names: SharedNames
  max: number
  ttl: number
  /** A task's history is trimmed (oldest first) to this many bytes when saved. */
  maxHistoryBytes: number
  /**
   * This host's current lease id: written as the owner of every task it saves. Only the host
   * running a task saves it (its send's result manager; other hosts forward cancels and only read),
   * and a save may come after the SDK released the task's bus, so "saved here" is the test.
   */
  hostId: () => string
}

/**
 * The task store of several hosts: PostgreSQL, one row per task (the whole task as JSON, its
 * state, the host running it), scoped per credential like the in-memory store. Every save is one
 * statement that also notifies the other hosts (`taskChannel`), delivered when it commits, so a
 * host that is told reads at least that version. A task in a final state never changes state
 * again: a late write of its former host (or of a cancel racing the end) is ignored by the row. A
 * save by another lease than the task's owner is ignored too (a task another host took over).
 */
export class PostgresTaskStore implements ServeTaskStore {
  /** Tasks counted at the last sweep (all credentials, all hosts). */
  size = 0

  constructor(private readonly sql: Sql, private readonly options: PostgresTaskStoreOptions) {}

  async load(taskId: string, context: ServerCallContext): Promise<Task | undefined> {
    const { tenant, scope, id } = refOf(context, taskId)
    const rows = await this.sql.unsafe(`SELECT task::text AS task FROM ${this.options.names.tasks} WHERE tenant = $1 AND scope = $2 AND id = $3`, [tenant, scope, id])
    return rows.length ? decodeTask(rows[0].task as string) : undefined
  }

  /** The name of the host whose lease last saved the task (`<hostName>` of `<hostName>#<id>`), if any. */
  async ownerName(taskId: string, context: ServerCallContext): Promise<string | undefined> {
    const { tenant, scope, id } = refOf(context, taskId)
    const rows = await this.sql.unsafe(`SELECT owner FROM ${this.options.names.tasks} WHERE tenant = $1 AND scope = $2 AND id = $3`, [tenant, scope, id])
    const owner = rows[0]?.owner as string | null | undefined
    return owner ? owner.slice(0, owner.lastIndexOf('#')) || owner : undefined
  }

  async save(task: Task, context: ServerCallContext): Promise<void> {
    const ref = refOf(context, task.id)
    const owner = this.options.hostId()
    const state = task.status?.state ?? 0
    const statusAt = task.status?.timestamp ? new Date(task.status.timestamp) : null
    const { tasks, taskChannel } = this.options.names
    await this.sql.unsafe(`WITH saved AS (
        INSERT INTO ${tasks} AS t (tenant, scope, id, context_id, state, status_at, task, owner)
        VALUES ($1, $2, $3, $4, $5, $6, ($7::text)::jsonb, $8)
        ON CONFLICT (tenant, scope, id) DO UPDATE SET
          context_id = excluded.context_id, state = excluded.state, status_at = excluded.status_at, task = excluded.task,
          owner = COALESCE(excluded.owner, t.owner), version = t.version + 1, updated_at = now()
        WHERE (t.state NOT IN (${FINAL_STATES.join(', ')}) OR t.state = excluded.state) AND (t.owner IS NULL OR t.owner = excluded.owner)
        RETURNING version)
      SELECT pg_notify($9, $10) FROM saved`,
    [ref.tenant, ref.scope, ref.id, task.contextId ?? '', state, isNaN(statusAt?.getTime() ?? 0) ? null : statusAt, encodeTask(boundHistory({ ...task }, this.options.maxHistoryBytes)), owner,
      taskChannel, taskPayload(ref)])
  }

  async list(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    const { tenant, scope } = refOf(context, '')
    const pageSize = Math.min(Math.max(1, params.pageSize ?? DEFAULT_PAGE_SIZE), MAX_PAGE_SIZE)
    const offset = /^\d{1,9}$/.test(params.pageToken ?? '') ? Number(params.pageToken) : 0
    const after = params.statusTimestampAfter ? new Date(params.statusTimestampAfter) : undefined
    const values: unknown[] = [tenant, scope]
    const where = ['tenant = $1', 'scope = $2']
    if (params.contextId) where.push(`context_id = $${values.push(params.contextId)}`)
    if (params.status) where.push(`state = $${values.push(params.status)}`)
    if (after && !isNaN(after.getTime())) where.push(`status_at > $${values.push(after)}`)
    const history = Math.max(0, Math.min(params.historyLength ?? 0, 1_000_000))
    // Summaries, built in the database (only their parts are read here), cut where the page would pass MAX_LIST_BYTES (the first stays).
    const rows = await this.sql.unsafe(`SELECT summary::text AS summary, total FROM (
        SELECT summary, total, row_number() OVER w AS rn, sum(octet_length(summary::text)) OVER w AS running FROM (
          SELECT updated_at, id, count(*) OVER () AS total, jsonb_build_object('id', id, 'contextId', task->'contextId',
            'status', task->'status', 'metadata', task->'metadata',
            'history', (SELECT coalesce(jsonb_agg(m ORDER BY i), '[]'::jsonb) FROM jsonb_array_elements(coalesce(task->'history', '[]'::jsonb))
              WITH ORDINALITY e(m, i) WHERE i > jsonb_array_length(coalesce(task->'history', '[]'::jsonb)) - $${values.push(history)}::int),
            'artifacts', CASE WHEN $${values.push(!!params.includeArtifacts)}::boolean THEN coalesce(task->'artifacts', '[]'::jsonb) ELSE '[]'::jsonb END
          ) AS summary FROM ${this.options.names.tasks}
          WHERE ${where.join(' AND ')} ORDER BY updated_at DESC, id OFFSET $${values.push(offset)} LIMIT $${values.push(pageSize)}
        ) page WINDOW w AS (ORDER BY updated_at DESC, id ROWS UNBOUNDED PRECEDING)
      ) sized WHERE rn = 1 OR running <= $${values.push(MAX_LIST_BYTES)} ORDER BY rn`, values as never[])
    const total = rows.length ? Number(rows[0].total) : 0
    const tasks = rows.map((row) => withoutNulls(decodeTask(row.summary as string)))
    const next = offset + tasks.length
    return { tasks, nextPageToken: next < total ? String(next) : '', pageSize, totalSize: total }
  }

  /**
   * Evicts tasks not being worked on whose last update is older than `ttl`, then the least
   * recently updated of them past `max` tasks in the whole store (every host's).
   */
  async sweep(): Promise<void> {
    const { tasks } = this.options.names
    const idle = `state NOT IN (${RUNNING_STATES.join(', ')})`
    await this.sql.unsafe(`DELETE FROM ${tasks} WHERE ${idle} AND updated_at < now() - $1 * interval '1 millisecond'`, [this.options.ttl])
    await this.sql.unsafe(`DELETE FROM ${tasks} t USING (
        SELECT tenant, scope, id FROM ${tasks} WHERE ${idle} ORDER BY updated_at LIMIT greatest(0, (SELECT count(*) FROM ${tasks}) - $1)
      ) old WHERE t.tenant = old.tenant AND t.scope = old.scope AND t.id = old.id`, [this.options.max])
    // A saved turn is kept while its task waits or runs; past that (or once the task is gone) it is garbage.
    await this.sql.unsafe(`DELETE FROM ${this.options.names.turns} s WHERE s.updated_at < now() - interval '1 minute' AND NOT EXISTS (SELECT 1 FROM ${tasks} t
      WHERE t.tenant = s.tenant AND t.scope = s.scope AND t.id = s.id AND t.state NOT IN (${FINAL_STATES.join(', ')}))`)
    const [{ count }] = await this.sql.unsafe(`SELECT count(*)::int AS count FROM ${tasks}`)
    this.size = count as number
  }

  /** The tasks stay for the other hosts; the connections are closed by the shared state. */
  clear(): void {}
}

/** A summary's fields the stored task did not have come back as null: dropped (the SDK's types say undefined). */
function withoutNulls(task: Task): Task {
  for (const key of Object.keys(task) as Array<keyof Task>) if (task[key] === null) delete task[key]
  return task
}
