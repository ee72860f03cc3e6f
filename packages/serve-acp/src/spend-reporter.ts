import type { BudgetSpend } from '@cordis-subagents/agent'

/**
 * Coalesces a run's spend (onSpend fires after every charge, synchronously) into at most one
 * report per event-loop turn (`setImmediate`), and never drops the last: `finish()` sends what is
 * still pending at once. Each report is the latest cumulative figure.
 */
export class SpendReporter {
  private latest?: BudgetSpend
  private timer?: NodeJS.Immediate
  private readonly sent: Promise<unknown>[] = []

  constructor(private readonly send: (spent: BudgetSpend) => Promise<unknown>) {}

  /** Records the run's cumulative spend; a report goes out on the next turn of the event loop. */
  charge = (spent: Readonly<BudgetSpend>): void => {
    this.latest = { steps: spent.steps, tokens: spent.tokens, toolCalls: spent.toolCalls, children: spent.children }
    this.timer ??= setImmediate(() => this.flush())
  }

  /** The last figure recorded (undefined before the first charge). */
  get last(): BudgetSpend | undefined {
    return this.latest ?? this.lastSent
  }

  private lastSent?: BudgetSpend

  private flush(): void {
    if (this.timer) clearImmediate(this.timer)
    this.timer = undefined
    const spent = this.latest
    this.latest = undefined
    if (!spent) return
    this.lastSent = spent
    this.sent.push(this.send(spent).catch(() => {}))
  }

  /** Sends what is pending now and waits for every report sent. */
  async finish(): Promise<void> {
    this.flush()
    await Promise.all(this.sent)
  }
}
