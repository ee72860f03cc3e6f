// Async cleanup a bin waits for before its process exits: what cordis' ctx.stop() does not await (a served session's
// close, an agent's dispose, an exporter's flush). A serving package keeps one in its process-wide state, so every copy
// of it the loader imported holds into the same one (serve-acp's and serve-mcp's bins).

export class ExitHolds {
  private readonly holds = new Set<Promise<unknown>>()

  /** Holds the exit until `work` settles (a rejection counts as settled). */
  hold(work: Promise<unknown>): void {
    const held: Promise<unknown> = work.catch(() => {}).finally(() => this.holds.delete(held))
    this.holds.add(held)
  }

  /** Resolves when every work held, including what was held meanwhile, has settled (the bin bounds the wait). */
  async settled(): Promise<void> {
    while (this.holds.size) await Promise.all([...this.holds])
  }
}
