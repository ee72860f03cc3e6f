import { type Context, type Logger, Service } from 'cordis'
import type { PendingQuestion } from '@cordis-subagents/shared'
import type { JournalledRun, RunJournal } from '../run/journal-port.js'
import type { SubagentOutcome } from '../types.js'

/** Most state changes kept while `ctx.checkpoints` is loading; later ones are not recorded (counted, logged). */
const MAX_WAITING_NOTES = 1000
/** Longest the kept state changes wait for `ctx.checkpoints`; then they are dropped (logged). */
const MAX_WAITING_MS = 60_000

type Hook = 'started' | 'parked' | 'resumed' | 'withdrawn' | 'settled'
type Note = { hook: Hook; args: unknown[] }

export interface WaitingBounds {
  maxNotes: number
  maxMs: number
}

/**
 * The journal while a checkpoints plugin is loaded but its store is not ready yet (its database
 * still opening): it keeps the runs' state changes, bounded in count and time, and `replay`
 * writes them through the store's journal once it is ready, so a delegation that ends early is
 * still recorded. Past a bound (or at a stop first) it warns once with how many runs it could not
 * record. Without a checkpoints plugin it keeps nothing.
 */
export class WaitingJournal implements RunJournal {
  private notes: Note[] = []
  private readonly lost = new Set<string>()
  private timer: NodeJS.Timeout | undefined
  private done = false

  constructor(
    private readonly log: Logger,
    private readonly expecting: () => boolean,
    private readonly bounds: WaitingBounds = { maxNotes: MAX_WAITING_NOTES, maxMs: MAX_WAITING_MS },
  ) {}

  started(run: JournalledRun): void { this.keep(run, 'started', [run]) }
  parked(run: JournalledRun, question: PendingQuestion): void { this.keep(run, 'parked', [run, question]) }
  resumed(run: JournalledRun, questionId: string, answer: string): void { this.keep(run, 'resumed', [run, questionId, answer]) }
  withdrawn(run: JournalledRun, questionId: string): void { this.keep(run, 'withdrawn', [run, questionId]) }
  settled(run: JournalledRun, outcome: SubagentOutcome): void { this.keep(run, 'settled', [run, outcome]) }

  /** Writes the kept state changes, in order, through `journal` (the store is ready); keeps nothing after. */
  replay(journal: RunJournal): void {
    const notes = this.finish()
    for (const { hook, args } of notes) {
      try {
        (journal[hook] as ((...a: unknown[]) => void) | undefined)?.apply(journal, args)
      } catch {
        // A journal hook never throws (journal.ts); a failed write is logged by the journal.
      }
    }
    if (this.lost.size) this.warn(`more than ${this.bounds.maxNotes} state changes waited for it`)
  }

  /** Gives up (the host stops before the store was ready): warns about what was not recorded. */
  close(): void {
    const notes = this.finish()
    for (const note of notes) this.lost.add((note.args[0] as JournalledRun).id)
    if (this.lost.size) this.warn('the host stopped before it was ready')
  }

  private keep(run: JournalledRun, hook: Hook, args: unknown[]): void {
    if (this.done || !this.expecting()) return
    if (this.notes.length >= this.bounds.maxNotes) {
      this.lost.add(run.id)
      return
    }
    this.notes.push({ hook, args })
    this.timer ??= setTimeout(() => {
      const notes = this.finish()
      for (const note of notes) this.lost.add((note.args[0] as JournalledRun).id)
      this.warn(`it was not ready within ${this.bounds.maxMs} ms`)
    }, this.bounds.maxMs).unref()
  }

  private finish(): Note[] {
    this.done = true
    clearTimeout(this.timer)
    const notes = this.notes
    this.notes = []
    return notes
  }

  private warn(why: string): void {
    const runs = [...this.lost].slice(0, 10).join(', ') + (this.lost.size > 10 ? ', …' : '')
    const text = '%d run(s) were not recorded in ctx.checkpoints (%s): they cannot be listed, resumed or re-read after a restart. Runs: %s'
    this.log.warn(text, this.lost.size, why, runs)
    this.lost.clear()
  }
}

/** Whether a checkpoints plugin is loaded in `ctx`'s app (its store may not be ready yet). */
export function checkpointsLoaded(ctx: Context): boolean {
  for (const runtime of ctx.registry.values()) {
    if ((runtime.plugin as unknown as { [key: symbol]: unknown } | undefined)?.[Service.provide] === 'checkpoints') return true
  }
  return false
}
