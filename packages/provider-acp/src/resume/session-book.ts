/**
 * The child session each parent agent continues when resume is on: one per parent, kept while
 * the parent lives (a WeakMap on the parent object, and dropped once the parent is disposed).
 * A session in use by a run is not handed to a second, concurrent delegation of the same parent.
 */
export interface ResumeTicket {
  /** The session to continue, when the parent has one that is free. */
  sessionId?: string
  /** With a fork provider: how many of the parent's completed messages that session holds (seeded into it). */
  seeded: number
  /**
   * Records the session the run ended up with (the same, or a new one) and frees it when the run
   * ends; `seeded`: the parent's messages it holds (a fork child's).
   */
  done(sessionId: string | undefined, loadable: boolean, ended: Promise<unknown>, seeded?: number): void
}

interface Entry {
  sessionId?: string
  cwd?: string
  seeded: number
  busy: boolean
}

export class SessionBook {
  private entries = new WeakMap<object, Entry>()

  /** A ticket for a delegation of `parent` in `cwd`; undefined when its session is busy (the run then starts a fresh, unrecorded one). */
  take(parent: object, cwd: string): ResumeTicket | undefined {
    if ((parent as { disposed?: unknown }).disposed === true) {
      this.entries.delete(parent)
      return undefined
    }
    let entry = this.entries.get(parent)
    if (!entry) this.entries.set(parent, entry = { busy: false, seeded: 0 })
    if (entry.busy) return undefined
    entry.busy = true
    const target = entry
    const claimed = target.cwd === cwd ? target.sessionId : undefined
    let settled = false
    return {
      sessionId: claimed,
      seeded: claimed ? target.seeded : 0,
      done: (sessionId, loadable, ended, seeded = 0) => {
        if (settled) return
        settled = true
        if (sessionId && loadable) {
          target.sessionId = sessionId
          target.cwd = cwd
          target.seeded = seeded
        }
        void ended.finally(() => {
          target.busy = false
          if ((parent as { disposed?: unknown }).disposed === true) this.entries.delete(parent)
        })
      },
    }
  }

  /** Forgets every parent's session (the provider is being stopped). */
  clear() {
    this.entries = new WeakMap()
  }
}
