import { MAX_TOOLS_PER_UPDATE, type SpentCounts, SpendReporter, spendValue } from '@cordis-subagents/shared'
import { reportOf } from './spend-report.js'
import type { TaskEvents } from './task-events.js'

/** Updates naming tool calls sent per turn of a task; later ones carry the spend only (each is kept in the task's history). */
const MAX_PROGRESS_UPDATES = 64

/**
 * A task's progress up: the tool calls its agent makes and its tree's spend, in one `working` update per event-loop turn
 * at most (the crossing's `SpendReporter` coalesces both). The SDK loads and stores the whole task for every event, and
 * keeps each update's message in the task's history, so a burst (a step's several calls, a quick call and its charge)
 * is one event, not one each. What is still pending when the turn ends is dropped (`discard`): the final status follows
 * at once and carries the last figure.
 */
export class TaskProgress {
  private readonly reporter: SpendReporter
  /** Tools called since the last update, and how many past `MAX_TOOLS_PER_UPDATE`. */
  private tools: string[] = []
  private more = 0
  private latest = ''
  private step = 0
  private named = 0

  constructor(private readonly events: TaskEvents) {
    this.reporter = new SpendReporter((spent) => this.send(spent))
  }

  /** The run's `onSpend`. */
  get charge(): (spent: Readonly<SpentCounts>) => void { return this.reporter.charge }
  /** The last figure recorded. */
  get last(): SpentCounts | undefined { return this.reporter.last }

  toolCall(name: string, step: number): void {
    if (this.named >= MAX_PROGRESS_UPDATES) return
    if (this.tools.length < MAX_TOOLS_PER_UPDATE) this.tools.push(name)
    else this.more++
    this.latest = name
    this.step = step
    this.reporter.nudge()
  }

  /** Drops what is pending: the turn ended, its final status says the rest. */
  discard(): void {
    this.tools = []
    this.more = 0
    this.reporter.discard()
  }

  finish(): Promise<void> { return this.reporter.finish() }

  private send(spent: SpentCounts): void {
    const ours = spendValue(reportOf(spent))
    const tools = this.tools
    if (!tools.length) return this.events.working(undefined, ours)
    const more = this.more
    this.tools = []
    this.more = 0
    this.named++
    const text = `calls ${tools.join(', ')}${more ? ` and ${more} more` : ''}`
    this.events.working(text, { ...ours, update: { kind: 'tool-call', tool: this.latest, tools, step: this.step } })
  }
}
