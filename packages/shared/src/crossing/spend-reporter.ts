// A served run's spend, reported up as it goes (the crossing up, see spend.ts): the run calls
// `charge` synchronously after every charge; the reporter sends at most one report per event-loop turn.

/** A run tree's cumulative spend, as the agent runtime's budgets count it. */
export interface SpentCounts {
  steps: number
  tokens: number
  toolCalls: number
  children: number
}

/**
 * Coalesces a run's spend into at most one report per event-loop turn (`setImmediate`), each the
 * latest cumulative figure, and never drops the last: `finish()` sends what is still pending at
 * once (synchronously) and waits for every report sent. A failed send is not fatal.
 */
export class SpendReporter {
  private latest?: SpentCounts
  private lastSent?: SpentCounts
  private timer?: NodeJS.Immediate
  /** The next report goes out even if no charge came since the last (`nudge`). */
  private nudged = false
  private readonly sent: Promise<unknown>[] = []

  constructor(private readonly send: (spent: SpentCounts) => unknown) {}

  /** Records the run's cumulative spend (copied); a report goes out on the next turn of the event loop. */
  charge = (spent: Readonly<SpentCounts>): void => {
    this.latest = { steps: spent.steps, tokens: spent.tokens, toolCalls: spent.toolCalls, children: spent.children }
    this.timer ??= setImmediate(() => this.flush())
  }

  /**
   * Something the report carries besides the figure is news (a caller's own part, read in `send`): the next report
   * goes out on the next turn even if no charge came since the last, with the latest figure. Before the first charge
   * there is no figure to send: the report waits for it.
   */
  nudge = (): void => {
    this.nudged = true
    this.timer ??= setImmediate(() => this.flush())
  }

  /** The last figure recorded (undefined before the first charge). */
  get last(): SpentCounts | undefined {
    return this.latest ?? this.lastSent
  }

  /** Drops a pending report (its figure stays `last`): for a caller whose final message carries the last figure itself. */
  discard(): void {
    if (this.timer) clearImmediate(this.timer)
    this.timer = undefined
    this.nudged = false
    if (this.latest) this.lastSent = this.latest
    this.latest = undefined
  }

  /** Sends what is pending now and waits for every report sent. */
  async finish(): Promise<void> {
    this.flush()
    await Promise.all(this.sent)
  }

  private flush(): void {
    if (this.timer) clearImmediate(this.timer)
    this.timer = undefined
    const spent = this.latest ?? (this.nudged ? this.lastSent : undefined)
    this.latest = undefined
    if (!spent) return
    this.nudged = false
    this.lastSent = spent
    // Sent now (synchronously), so a final status that follows `finish()` comes after it.
    let sending: Promise<unknown>
    try {
      sending = Promise.resolve(this.send(spent))
    } catch (error) {
      sending = Promise.reject(error)
    }
    this.sent.push(sending.catch(() => {}))
  }
}
