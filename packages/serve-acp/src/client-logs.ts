/**
 * The log lines an ACP client can make this server write, under one log budget per plugin instance (shared's
 * `LogBudget`): per kind, the first 10 lines a minute are written, the rest counted and summarised in one line (on the
 * next line of that kind after the minute, or when the connection closes, or at the plugin's dispose).
 *
 * - A foreign crossing: an `initialize` whose `_meta` names a crossing that is not this process's (one warning a request).
 * - The ACP SDK's console: the SDK reports protocol trouble with raw `console.error` / `console.warn`, in text partly
 *   chosen by the client ("Invalid message" with its keys, the id of a response to no request), once per message.
 *   While the connection is open those calls go to serve-acp's logger instead (shared's `routeSdkConsole`): as warnings,
 *   cut to 2,000 characters, scrubbed by a redactor and on one line. The text does not say which connection it is
 *   about: with several connections (or provider-acp's processes) alive, it goes to the owner that registered first.
 */
import type { Logger } from 'cordis'
import { LogBudget, Redactor, routeSdkConsole, type SdkConsoleCall } from '@cordis-subagents/shared'

/** The ACP SDK's module path, as it shows in a stack frame. */
const ACP_SDK_PATH = /[\\/]@agentclientprotocol[\\/]sdk[\\/]/
/** The budget's keys: what a summary line names. */
const SDK_KEY = 'serve-acp: ACP SDK'
const CROSSING_KEY = 'serve-acp: initialize named a foreign crossing'
const FOREIGN_CROSSING = 'the ACP client named a crossing (initialize _meta) that is not this process\'s SUBAGENT_CROSSING_FOR; '
  + 'no env tool ceiling applies'

/** One plugin instance's end of what a client can make it log. */
export class ClientLogs {
  private readonly budget: LogBudget
  /** No secrets of ours to mask: credential shapes, terminal escapes and control characters of the client's text. */
  private readonly redactor = new Redactor()
  private end?: () => void

  constructor(logger: Logger) {
    this.budget = new LogBudget(logger.warn, { name: 'serve-acp' })
  }

  /** The connection opens: the ACP SDK's console goes to the logger until `close()`. */
  open(): void {
    this.end ??= routeSdkConsole({ from: ACP_SDK_PATH, sink: (call) => this.sdkLine(call) })
  }

  /** The connection is closed: the SDK's console is no longer routed, and what the budget counted is written. */
  close(): void {
    this.end?.()
    this.end = undefined
    this.budget.flush()
  }

  /** The plugin's dispose: what the budget counted is written now (the routing ends with the connection's close). */
  flush(): void {
    this.budget.flush()
  }

  /** `initialize` named a crossing that is not this process's. */
  foreignCrossing(): void {
    this.budget.log(CROSSING_KEY, '%s', FOREIGN_CROSSING)
  }

  private sdkLine(call: SdkConsoleCall) {
    // Formatting and redaction cost; a line the budget only counts is neither formatted nor redacted.
    this.budget.logWith(SDK_KEY, () => ['ACP SDK: %s', this.redactor.redact(call.text())])
  }
}
