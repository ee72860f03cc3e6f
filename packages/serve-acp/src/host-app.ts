/** What the bin needs of the app it starts: a cordis app from a cordis.yml, or a Koishi app from a koishi.yml. */
export interface HostApp {
  /** Listens on the app's root context (serve-acp's events, internal/error). */
  on(event: string, listener: (...args: any[]) => void): void
  /** Loads the config and applies its plugins; waits (bounded) until every entry has applied or failed. */
  start(errorCount: () => number, timeout: number): Promise<void>
  /** Stops the app (every plugin disposed). */
  stop(): Promise<void>
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref())
}
