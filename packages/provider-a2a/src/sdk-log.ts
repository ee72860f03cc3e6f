/**
 * The A2A SDKs' clients (1.x for A2A 1.0, 0.3 for A2A 0.2/0.3) report a remote's junk with raw `console.error` /
 * `console.warn`, in the remote's own text: an SSE event that is not JSON is written whole (up to 4 MiB,
 * `MAX_SSE_LINE_BYTES`), escapes and all, once per stream we open. The SDKs' clients only run for our runs, so while
 * any run of the provider lives (from its start to its dispose, also past the provider's dispose: a run may outlive its
 * load), those calls go to the provider's warnings instead (shared's `routeSdkConsole`): on one line, cut to 2,000
 * characters, scrubbed by the provider's redactor as all its peer text is, under a log budget (shared's `LogBudget`):
 * the first 10 lines a minute are written, the rest counted, and summarised in one line on the next line after the
 * minute, or at the provider's dispose (or, for what its last runs add after it, when the last one ends).
 */
import { LogBudget, type LogLine, type Redactor, routeSdkConsole, type SdkConsoleCall } from '@cordis-subagents/shared'

/**
 * The A2A SDKs' client modules, as a stack frame names them: `@a2a-js/sdk/dist/client/…`, its 0.3 compat client
 * `…/dist/compat/v0_3/client/…`, and the 0.3 SDK's (installed as `a2a-sdk-v03`). Not their servers' (`…/server/…`):
 * serve-a2a routes those, so in one process each package gets its own SDK's calls.
 */
export const A2A_SDK_CLIENT_PATH = /[\\/](?:@a2a-js[\\/]sdk[\\/]dist[\\/](?:compat[\\/]v0_3[\\/])?|a2a-sdk-v03[\\/]dist[\\/])client[\\/]/

/** The provider's end of the A2A SDKs' console: one per provider. */
export class SdkConsole {
  /** Runs alive (each from its start to its dispose). */
  private holds = 0
  private closed = false
  private end?: () => void
  private readonly budget: LogBudget
  /** The budget's key: what its summary line names. */
  private readonly key: string

  constructor(warn: LogLine, private readonly providerName: string, private readonly redactor: Redactor) {
    this.key = `${providerName}: A2A SDK`
    this.budget = new LogBudget(warn, { name: this.key })
  }

  /**
   * A run of the provider started: the SDKs' console is routed until the returned function is called (once), even
   * past the provider's `close`; the SDKs' clients write only while a run of ours has requests out.
   */
  hold(): () => void {
    if (this.holds++ === 0) this.end = routeSdkConsole({ from: A2A_SDK_CLIENT_PATH, sink: (call) => this.line(call) })
    let released = false
    return () => {
      if (released) return
      released = true
      if (--this.holds > 0) return
      this.end?.()
      this.end = undefined
      // Not summarised at each run's end (a remote failing every run would make one summary per run): at `close`, or
      // here once the provider is closed.
      if (this.closed) this.budget.flush()
    }
  }

  /** The provider is disposed: what the budget counted is summarised now (what its last runs add, when they end). */
  close(): void {
    this.closed = true
    this.budget.flush()
  }

  private line(call: SdkConsoleCall) {
    // Formatting and redaction cost; a line the budget only counts is neither formatted nor redacted.
    this.budget.logWith(this.key, () => ['%s: A2A SDK: %s', this.providerName, this.redactor.redact(call.text())])
  }
}
