import type { ServerCallContext } from '@a2a-js/sdk/server'
import type postgres from 'postgres'
import type { AgentCheckpoint } from '@cordis-subagents/agent'
import type { Crossing } from '@cordis-subagents/shared'
import { movedPayload } from './feed-payloads.js'
import { leaseGone } from './host-lease.js'
import { FINAL_STATES, type SharedNames, STATE } from './shared-schema.js'
import { refOf } from './shared-store.js'
import type { TaskRef } from './task-ref.js'

/** A saved turn larger than this (its agent's whole transcript, as JSON) is not saved: the task cannot be continued elsewhere. */
const MAX_SAVED_TURN_BYTES = 8 * 1024 * 1024

/**
 * What another host needs to continue a task: its agent's checkpoint and the crossing it runs
 * under; while a turn runs, also that turn's leg and input (the checkpoint then holds only the
 * turns before it) and the messages sent since, so a host that takes over an interrupted task runs
 * that turn again.
 */
export interface SavedTurn {
  v: 1
  crossing: Crossing
  agent: AgentCheckpoint
  turn?: { leg: 'run' | 'resume'; input: string; messages?: string[] }
}

/** Saving and dropping a task's turn; `undefined` for a host without a shared store. */
export interface TurnSaver {
  save(taskId: string, context: ServerCallContext | undefined, saved: SavedTurn): Promise<void>
  /** Drops the saved turn of a task whose turn ended (kept until its final state is stored). */
  dropEnded(taskId: string, context: ServerCallContext | undefined): Promise<void>
}

/**
 * The saved turns of the shared store (`a2a_turns`, one row per unfinished task that has one).
 * Claiming a task takes its saved turn out of the table and makes the claimer the task's owner in
 * one statement: whoever deletes the row continues the task, so it continues once.
 */
export class PostgresTurns implements TurnSaver {
  constructor(
    private readonly sql: postgres.Sql, private readonly names: SharedNames, private readonly hostId: () => string,
    private readonly warn: (format: string, ...args: unknown[]) => void,
  ) {}

  async save(taskId: string, context: ServerCallContext | undefined, saved: SavedTurn): Promise<void> {
    const ref = refOf(context, taskId)
    const text = JSON.stringify(saved)
    const bytes = Buffer.byteLength(text)
    if (bytes > MAX_SAVED_TURN_BYTES) {
      this.warn('task %s: its turn (%d bytes) is over %d bytes and is not saved; if this host dies, the task fails (HOST_LOST)', taskId, bytes, MAX_SAVED_TURN_BYTES)
      return this.drop(taskId, context)
    }
    await this.sql.unsafe(`INSERT INTO ${this.names.turns} (tenant, scope, id, saved) SELECT $1, $2, $3, ($4::text)::jsonb
      WHERE NOT EXISTS (${this.ownedElsewhere(5)})
      ON CONFLICT (tenant, scope, id) DO UPDATE SET saved = excluded.saved, updated_at = now()`, [ref.tenant, ref.scope, ref.id, text, this.hostId()])
  }

  private async drop(taskId: string, context: ServerCallContext | undefined): Promise<void> {
    const { tenant, scope, id } = refOf(context, taskId)
    await this.sql.unsafe(`DELETE FROM ${this.names.turns} WHERE tenant = $1 AND scope = $2 AND id = $3 AND NOT EXISTS (${this.ownedElsewhere(4)})`,
      [tenant, scope, id, this.hostId()])
  }

  /**
   * Drops the saved turn of a task whose turn ended here, once its final state is stored. Until
   * then it stays: a reaper racing the final save (this host's lease ran out) interrupts the task
   * rather than failing it, and the final save still lands; the sweep removes what is left.
   */
  async dropEnded(taskId: string, context: ServerCallContext | undefined): Promise<void> {
    const { tenant, scope, id } = refOf(context, taskId)
    await this.sql.unsafe(`DELETE FROM ${this.names.turns} s WHERE s.tenant = $1 AND s.scope = $2 AND s.id = $3
      AND EXISTS (SELECT 1 FROM ${this.names.tasks} t WHERE t.tenant = $1 AND t.scope = $2 AND t.id = $3 AND t.state IN (${FINAL_STATES.join(', ')}))`,
    [tenant, scope, id])
  }

  /** The task ($1-$3) belongs to another lease than `$param` (taken over, or this host's lease was lost): not this host's to write. */
  private ownedElsewhere(param: number): string {
    return `SELECT 1 FROM ${this.names.tasks} t WHERE t.tenant = $1 AND t.scope = $2 AND t.id = $3 AND t.owner IS DISTINCT FROM $${param}`
  }

  /**
   * Claims a task waiting for a message (input-required) to run its next turn here: takes its saved
   * turn (undefined when there was none) and makes this host its owner; the host that held it is
   * told (`movedChannel`: digests of the task's key and of the claiming lease). `claimed` is false
   * when another host took it first (or it is not waiting). A task this host owns is claimed
   * without a saved turn (its agent is here).
   */
  async claim(ref: TaskRef): Promise<{ claimed: boolean; saved?: SavedTurn }> {
    const { turns, tasks, hosts, movedChannel } = this.names
    // Only a waiting turn is taken: a park save, or the turn of a task whose owner's lease is gone (interrupted). A
    // turn-start save of a live owner belongs to a turn running there (claimed a moment ago): taking it would run it twice.
    const [row] = await this.sql.unsafe(`WITH taken AS (
        DELETE FROM ${turns} WHERE tenant = $1 AND scope = $2 AND id = $3 AND (NOT (saved ? 'turn') OR EXISTS (
          SELECT 1 FROM ${tasks} o LEFT JOIN ${hosts} h ON h.id = o.owner
          WHERE o.tenant = $1 AND o.scope = $2 AND o.id = $3 AND o.owner IS DISTINCT FROM $4 AND (o.owner IS NULL OR ${leaseGone(this.names)})))
        RETURNING saved::text AS saved),
      task AS (
        UPDATE ${tasks} t SET owner = $4, version = version + 1, updated_at = now()
        WHERE tenant = $1 AND scope = $2 AND id = $3 AND state = ${STATE.INPUT_REQUIRED} AND (EXISTS (SELECT 1 FROM taken) OR owner = $4)
        RETURNING (SELECT owner FROM ${tasks} WHERE tenant = $1 AND scope = $2 AND id = $3) AS before)
      SELECT (SELECT saved FROM taken) AS saved, (SELECT before FROM task) AS before, EXISTS (SELECT 1 FROM task) AS claimed,
        (SELECT pg_notify($5, $6) FROM task WHERE before IS DISTINCT FROM $4) AS told`,
    [ref.tenant, ref.scope, ref.id, this.hostId(), movedChannel, movedPayload(ref, this.hostId())])
    const saved = row.saved ? JSON.parse(row.saved as string) as SavedTurn : undefined
    return { claimed: row.claimed as boolean, ...saved ? { saved } : {} }
  }
}
