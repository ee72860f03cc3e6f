/**
 * The log lines a client can make this host write once per request or per task update, each under a log budget
 * (shared's `LogBudget`: per key, the first 10 lines a minute are written, the rest counted and summarised in one line
 * on the key's next line after the minute, or at the server's stop).
 *
 * - **The A2A SDK's server** (its JSON-RPC handler and request handler, 1.0 and the 0.3 compat layer) reports with raw
 *   `console.error` / `warn` / `info` / `debug`, once per request for some of a client's mistakes (an unsupported
 *   `A2A-Version`, a `SubscribeToTask` of an unknown task), in text partly the client's (its JSON-RPC id, whole).
 *   While the server listens, those calls go to the plugin's logger instead (shared's `routeSdkConsole`): errors and
 *   warnings as warnings, info and debug at debug level, on one line, cut to 2,000 characters. The SDK's text says
 *   neither the request nor the credential it is about, so all of them share one key, `A2A SDK`.
 * - **Push notifications not delivered** (`PUSH_*`): one warning per update and webhook, so a client giving each task a
 *   webhook that refuses makes several per task. They are budgeted per credential (the task's owner): one client
 *   spends only its own budget.
 */
import { LogBudget, type LogLine, routeSdkConsole, type SdkConsoleCall } from '@cordis-subagents/shared'

/**
 * The A2A SDK's server modules (`dist/server/…` and `dist/compat/v0_3/server/…`, ES and CommonJS), as a stack frame
 * names them. Not its client's (`dist/client/…`): provider-a2a routes those, so in one process each gets its own.
 */
export const A2A_SDK_SERVER_PATH = /[\\/]@a2a-js[\\/]sdk[\\/]dist[\\/](?:compat[\\/]v0_3[\\/])?server[\\/]/

/** The key (and the line's prefix) of the SDK's lines. */
const SDK_KEY = 'A2A SDK'

/** One server's budgeted lines: made at its start, closed at its stop. */
export class ServerLogs {
  private end?: () => void
  /** The SDK's `console.error` / `console.warn`, as warnings. */
  private readonly sdkWarnings: LogBudget
  /** The SDK's `console.info` / `console.debug`, at debug level. */
  private readonly sdkNotes: LogBudget
  private readonly pushes: LogBudget

  constructor(logger: { warn: LogLine; debug: LogLine }) {
    this.sdkWarnings = new LogBudget(logger.warn, { name: 'serve-a2a: A2A SDK' })
    this.sdkNotes = new LogBudget(logger.debug, { name: 'serve-a2a: A2A SDK' })
    this.pushes = new LogBudget(logger.warn, { name: 'serve-a2a: push notifications' })
  }

  /** The server is about to listen: the SDK server's console goes to the logger until `close`. */
  open(): void {
    this.end ??= routeSdkConsole({
      from: A2A_SDK_SERVER_PATH, methods: ['error', 'warn', 'info', 'debug'], sink: (call) => this.sdkLine(call),
    })
  }

  /** A push notification of a task of `scope` (its credential's scope, never the credential) was not delivered. */
  pushFailed(scope: string, code: string, message: string): void {
    this.pushes.log(`push notifications (${scope})`, '%s: %s', code, message)
  }

  /** The server stopped: the SDK's console is routed no more, and what the budgets counted is summarised now. */
  close(): void {
    this.end?.()
    this.end = undefined
    this.sdkWarnings.flush()
    this.sdkNotes.flush()
    this.pushes.flush()
  }

  private sdkLine(call: SdkConsoleCall) {
    const budget = call.method === 'error' || call.method === 'warn' ? this.sdkWarnings : this.sdkNotes
    // A line the budget only counts is not formatted.
    budget.logWith(SDK_KEY, () => ['%s: %s', SDK_KEY, call.text()])
  }
}
