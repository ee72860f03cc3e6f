import { createHash } from 'node:crypto'
import { checkId } from './codec.js'
import { TABLES, type TaskKeyRecord } from './records.js'
import { database, type StoreContext } from './store.js'

/** What makes two task calls "the same": one parent asking one agent of one provider the same prompt. */
export interface TaskKeyInput {
  parent: string
  provider: string
  agent: string
  prompt: string
}

export interface Claim {
  key: string
  /** True for exactly one claimer of a key; the others get the winner's run id. */
  claimed: boolean
  runId: string
}

/**
 * sha256 of the host and the four parts, length-prefixed so no two different inputs collide by concatenation. The
 * store's claims hash its own `host`: a parent's id is a counter of its process (`lead-1` in every host), so two hosts
 * on one database asking the same of their `lead-1` are two tasks, not one.
 */
export function taskKey(input: TaskKeyInput, host = ''): string {
  const hash = createHash('sha256')
  for (const part of [host, input.parent, input.provider, input.agent, input.prompt]) {
    const text = String(part)
    hash.update(`${Buffer.byteLength(text)}:`).update(text)
  }
  return hash.digest('hex')
}

export class TaskKeys {
  constructor(private readonly store: StoreContext) {}

  /**
   * Claims a task key for `runId`. The key is the table's primary key, so the database lets
   * exactly one insert win, across processes on one server too; every loser reads the winner.
   */
  async claim(input: TaskKeyInput, runId: string): Promise<Claim> {
    checkId('runId', runId)
    const key = taskKey(input, this.store.host)
    const db = database(this.store)
    try {
      await db.create(TABLES.taskKeys, {
        key, parent: checkId('parent', input.parent), runId, host: this.store.host, claimedAt: new Date(),
      })
      return { key, claimed: true, runId }
    } catch (error) {
      const [existing] = await db.get(TABLES.taskKeys, { key })
      if (!existing) throw error
      return { key, claimed: false, runId: existing.runId }
    }
  }

  async get(input: TaskKeyInput): Promise<TaskKeyRecord | undefined> {
    const [row] = await database(this.store).get(TABLES.taskKeys, { key: taskKey(input, this.store.host) })
    return row
  }

  /** Gives a key up (its spawn failed), only if `runId` still holds it; true when it was released. */
  async release(key: string, runId: string): Promise<boolean> {
    const result = await database(this.store).remove(TABLES.taskKeys, { key, runId })
    return (result.removed ?? 0) > 0
  }
}
