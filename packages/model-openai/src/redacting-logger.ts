import { inspect } from 'node:util'
import { capForRedaction, Redactor } from '@cordis-subagents/shared'

/** Where a model writes its log lines (console by default). */
export interface Logger {
  debug(message: string, ...args: unknown[]): void
  info(message: string, ...args: unknown[]): void
  warn(message: string, ...args: unknown[]): void
  error(message: string, ...args: unknown[]): void
}

/** Longest log line passed on (the SDK's debug lines carry whole request and response bodies). */
const LOG_LINE_LIMIT = 16 * 1024

/**
 * Wraps the logger handed to the OpenAI SDK: each line (message and arguments, objects
 * rendered with `util.inspect`) is capped and redacted before it reaches `target`, so
 * `OPENAI_LOG=debug` prints no key, header secret, URL user info or query value.
 */
export function redactingLogger(target: Logger, secrets: readonly string[]): Logger {
  const redactor = new Redactor(secrets)
  const line = (message: unknown, args: unknown[]) => {
    const text = [message, ...args]
      .map((part) => (typeof part === 'string' ? part : inspect(part, { depth: 4, breakLength: Infinity, maxStringLength: LOG_LINE_LIMIT, maxArrayLength: 50 })))
      .join(' ')
    return redactor.redact(capForRedaction(text, LOG_LINE_LIMIT))
  }
  return {
    debug: (message, ...args) => target.debug('%s', line(message, args)),
    info: (message, ...args) => target.info('%s', line(message, args)),
    warn: (message, ...args) => target.warn('%s', line(message, args)),
    error: (message, ...args) => target.error('%s', line(message, args)),
  }
}
