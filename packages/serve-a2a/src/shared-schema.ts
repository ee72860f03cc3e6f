import { randomBytes } from 'node:crypto'
import type postgres from 'postgres'

type Sql = postgres.Sql

/** Task states of the SDK (1.x numbers) the shared store reasons about. */
export const STATE = { SUBMITTED: 1, WORKING: 2, COMPLETED: 3, FAILED: 4, CANCELED: 5, INPUT_REQUIRED: 6, REJECTED: 7 } as const
/** Final states: a task in one never changes state again (the store refuses it). */
export const FINAL_STATES = [STATE.COMPLETED, STATE.FAILED, STATE.CANCELED, STATE.REJECTED]
/** States of a task being worked on: never evicted, reaped when their host's lease ends. */
export const RUNNING_STATES = [STATE.SUBMITTED, STATE.WORKING]

/** Qualified table names and notification channels of one deployment (one schema). */
export interface SharedNames {
  schema: string
  tasks: string
  hosts: string
  /** The saved turn of each unfinished task (the agent's checkpoint), so any host can continue it. */
  turns: string
  /** Settings of the deployment every host reads: the key naming credential scopes (`scope-key`). */
  meta: string
  /** "a task changed" pings: `1 <task digest>` (feed-payloads.ts: every payload is of fixed size). */
  taskChannel: string
  /** Cancel requests for a task running on another host: `1 <task digest>`. */
  cancelChannel: string
  /** A task another host claimed (it continues it): `1 <task digest> <lease digest>`; the host that held it lets it go. */
  movedChannel: string
  /** The first key of every host's liveness lock (`pg_advisory_lock(lockSpace, lock_key)`). */
  lockSpace: string
}

/** `schema` is checked by the config's pattern (lower-case identifier), so it is quoted as is. */
export function namesOf(schema: string): SharedNames {
  return {
    schema,
    tasks: `"${schema}".a2a_tasks`,
    hosts: `"${schema}".a2a_hosts`,
    turns: `"${schema}".a2a_turns`,
    meta: `"${schema}".a2a_meta`,
    taskChannel: `a2a_task_${schema}`,
    cancelChannel: `a2a_cancel_${schema}`,
    movedChannel: `a2a_moved_${schema}`,
    lockSpace: `(hashtext('serve-a2a:${schema}') & 2147483647)`,
  }
}

/**
 * Creates the schema, tables and indexes when missing. Hosts starting together serialize on an
 * advisory lock (CREATE ... IF NOT EXISTS alone races on the catalog).
 */
export async function ensureTables(sql: Sql, names: SharedNames): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(hashtext(${`serve-a2a:${names.schema}`}))`
    await tx.unsafe(`CREATE SCHEMA IF NOT EXISTS "${names.schema}"`)
    await tx.unsafe(`CREATE TABLE IF NOT EXISTS ${names.tasks} (
      tenant text NOT NULL,
      scope text NOT NULL,
      id text NOT NULL,
      context_id text NOT NULL DEFAULT '',
      state integer NOT NULL,
      status_at timestamptz,
      task jsonb NOT NULL,
      owner text,
      version bigint NOT NULL DEFAULT 1,
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant, scope, id))`)
    await tx.unsafe(`CREATE INDEX IF NOT EXISTS a2a_tasks_updated ON ${names.tasks} (updated_at)`)
    await tx.unsafe(`CREATE INDEX IF NOT EXISTS a2a_tasks_scope_updated ON ${names.tasks} (tenant, scope, updated_at DESC)`)
    await tx.unsafe(`CREATE INDEX IF NOT EXISTS a2a_tasks_live_owner ON ${names.tasks} (owner) WHERE state NOT IN (${FINAL_STATES.join(', ')})`)
    await tx.unsafe(`CREATE TABLE IF NOT EXISTS ${names.hosts} (
      id text PRIMARY KEY,
      name text NOT NULL,
      lease_until timestamptz NOT NULL,
      started_at timestamptz NOT NULL DEFAULT now())`)
    // Added after the first release: tables created by an older host get the column here.
    await tx.unsafe(`ALTER TABLE ${names.hosts} ADD COLUMN IF NOT EXISTS lock_key integer`)
    await tx.unsafe(`ALTER TABLE ${names.hosts} ADD COLUMN IF NOT EXISTS locked_at timestamptz`)
    await tx.unsafe(`CREATE TABLE IF NOT EXISTS ${names.turns} (
      tenant text NOT NULL,
      scope text NOT NULL,
      id text NOT NULL,
      saved jsonb NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant, scope, id))`)
    await tx.unsafe(`CREATE TABLE IF NOT EXISTS ${names.meta} (name text PRIMARY KEY, value text NOT NULL)`)
    // The first host of a store draws the key; every later one reads it (the insert keeps the first).
    await tx.unsafe(`INSERT INTO ${names.meta} (name, value) VALUES ('scope-key', $1) ON CONFLICT (name) DO NOTHING`, [randomBytes(32).toString('hex')])
  })
}

/**
 * The key every host of the store names credential scopes with (HMAC of each credential), and how
 * many tasks an older version filed by list position (`credential-<n>`): no credential reaches
 * those any more (a position named different tokens on different hosts), so they age out.
 */
export async function readScopeKey(sql: Sql, names: SharedNames): Promise<{ key: Buffer; legacy: number }> {
  const [row] = await sql.unsafe(`SELECT value, (SELECT count(*)::int FROM ${names.tasks} WHERE scope LIKE 'credential-%') AS legacy
    FROM ${names.meta} WHERE name = 'scope-key'`)
  return { key: Buffer.from(row.value as string, 'hex'), legacy: row.legacy as number }
}
