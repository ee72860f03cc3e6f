import { describeError, headChars, type Redactor } from '@cordis-subagents/shared'
import { LimitError } from './bounded-fetch.js'

/**
 * A failed request in one line for a diagnostic: the limit of ours that cut it (`cutBy`, the
 * transport's abort reason, or the error itself), else the error and its cause's code; redacted
 * (the remote may echo our credentials) and capped at 1,000 characters.
 */
export function describeRequestError(error: unknown, cutBy: unknown, redactor: Redactor): string {
  if (cutBy instanceof LimitError) return cutBy.message
  if (error instanceof LimitError) return error.message
  const cause = (error as { cause?: { code?: string; message?: string } } | undefined)?.cause
  const base = describeError(error)
  const detail = cause?.code ? ` (${cause.code}${cause.message ? `: ${cause.message}` : ''})` : ''
  return headChars(redactor.redact(`${base}${detail}`), 1_000)
}
