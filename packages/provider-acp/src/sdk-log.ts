/**
 * The ACP SDK reports protocol trouble with raw `console.error` / `console.warn`, in text partly chosen by the agent
 * ("Invalid message", the ids of unknown responses). While any process of the provider lives (a run's, a pooled or a
 * spare one, so also while no run holds it), those calls go to the provider's logger instead (shared's
 * `routeSdkConsole`): as warnings, scrubbed by the provider's redactor and under a log budget (shared's `LogBudget`):
 * the first 10 lines a minute are written, the rest counted, and summarised in one line on the next line after the
 * minute, when the last process is gone, or at the provider's `stop()`.
 */
import type { Logger } from 'cordis'
import { LogBudget, type Redactor, routeSdkConsole, type SdkConsoleCall } from '@cordis-subagents/shared'

/** The ACP SDK's module path, as it shows in a stack frame. */
const ACP_SDK_PATH = /[\\/]@agentclientprotocol[\\/]sdk[\\/]/

/** What a process of the provider takes while it lives (see `SdkConsole.hold`). */
export interface SdkConsoleHold {
  hold(): () => void
}

/** The provider's end of the ACP SDK's console: one per provider. */
export class SdkConsole implements SdkConsoleHold {
  private holds = 0
  private end?: () => void
  private readonly budget: LogBudget
  /** The budget's key: what its summary line names. */
  private readonly key: string

  /** `redactor`: the provider's latest (its runs build theirs from the same environment policy). */
  constructor(logger: Logger, private readonly providerName: string, private readonly redactor: () => Redactor) {
    this.key = `${providerName}: ACP SDK`
    this.budget = new LogBudget(logger.warn, { name: this.key })
  }

  /** A process of the provider started: the SDK's console is routed until the returned function is called (once). */
  hold(): () => void {
    if (this.holds++ === 0) this.end = routeSdkConsole({ from: ACP_SDK_PATH, sink: (call) => this.line(call) })
    let released = false
    return () => {
      if (released) return
      released = true
      if (--this.holds === 0) this.close()
    }
  }

  /**
   * The provider stopped, or its last process is gone: what the budget counted is summarised now, and the routing ends
   * unless a process still lives (one serving a run: it ends with that process).
   */
  close(): void {
    if (this.holds === 0) {
      this.end?.()
      this.end = undefined
    }
    this.budget.flush()
  }

  private line(call: SdkConsoleCall) {
    // Formatting and redaction cost; a line the budget only counts is neither formatted nor redacted.
    this.budget.logWith(this.key, () => ['%s: ACP SDK: %s', this.providerName, this.redactor().redact(call.text())])
  }
}
