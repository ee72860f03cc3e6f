import { createHash } from 'node:crypto'
import type { Delegation } from './delegation.js'
import { PendingStart } from './pending-start.js'
import type { SubagentHandle, SubagentOutcome, SubagentRequest, SubagentRunInfo, SubagentRunState, SubagentStart } from '../types.js'
import { KeptWith, type PendingQuestion } from '@cordis-subagents/shared'

/** Task keys one parent remembers in memory; past it the oldest ended run's key goes first (else the oldest). */
export const MAX_TASK_KEYS_PER_PARENT = 1000

/** Ended runs a task key still reattaches to: their outcome is the task's answer. Any other ending is forgotten (a retry starts afresh). */
const RETAINED = new Set(['completed', 'closed'])

/** The task key of a delegation: sha256 over the parent's id, the provider, the model, the persona and the prompt. */
export function reattachKey(provider: string, request: SubagentRequest): string {
  const parts = [request.parent.id, provider, request.agentOptions?.model ?? '', request.persona ?? '', request.prompt]
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex')
}

/**
 * Reattach by task key, in memory: per parent agent (weakly), the run each task key last started.
 * A key finds its run while it is starting, running, parked or interrupted, or ended `completed`
 * / `closed`; a run that failed to start or ended otherwise is forgotten.
 */
export class ReattachKeys {
  private readonly books = new KeptWith<Map<string, Start>>('reattach keys')

  find(parent: object, key: string): Start | undefined {
    const book = this.books.get(parent)
    const start = book?.get(key)
    if (!start) return undefined
    const ending = runOf(start)?.verbs.ending
    if (start.rejected || (ending && !RETAINED.has(ending.stopReason))) {
      book!.delete(key)
      return undefined
    }
    return start
  }

  record(parent: object, key: string, run: Start): void {
    let book = this.books.get(parent)
    if (!book) this.books.set(parent, book = new Map())
    if (book.size >= MAX_TASK_KEYS_PER_PARENT) {
      let evict: string | undefined
      for (const [k, r] of book) {
        if (runOf(r)?.state === 'ended' || r.rejected) { evict = k; break }
      }
      book.delete(evict ?? book.keys().next().value!)
    }
    book.set(key, run)
    run.handle.catch(() => { if (book!.get(key) === run) book!.delete(key) })
  }
}

/** A start a task key remembers: the run, or a start still waiting for its slots. */
type Start = Delegation | PendingStart

function runOf(start: Start): Delegation | undefined {
  return start instanceof PendingStart ? start.run : start
}

/** A second holder's start of a reattached run: it fulfils with an attached handle once the run is handed over. */
export function attach(start: Start): SubagentStart {
  return { handle: start.handle.then((run) => new AttachedHandle(run as Delegation)), cancel: () => {} }
}

/**
 * The run another call of the same task started, shared: it reads, steers and answers the run,
 * but does not own it (its `cancel` and `dispose` do nothing; the owner disposes). `result` is
 * the run's outcome as of the attach: the final one once ended, the pending one while parked,
 * else the next one.
 */
class AttachedHandle implements SubagentHandle {
  readonly attached = true
  readonly result: Promise<SubagentOutcome>

  constructor(private readonly run: Delegation) {
    this.result = run.current()
  }

  get id(): string { return this.run.id }
  get info(): SubagentRunInfo { return this.run.info }
  get childId(): string | undefined { return this.run.childId }
  get state(): SubagentRunState { return this.run.state }
  get question(): PendingQuestion | undefined { return this.run.question }
  resume(answer: string): Promise<SubagentOutcome> { return this.run.resume(answer) }
  current(): Promise<SubagentOutcome> { return this.run.current() }
  send(message: string): void { this.run.send(message) }
  cancel(): void {}
  dispose(): Promise<void> { return Promise.resolve() }
}
