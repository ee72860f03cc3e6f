export type ServeMcpErrorCode =
  /** The serving plugin's config is unusable (`tools` is empty). */
  | 'MCP_SERVE_INVALID_CONFIG'

/** An error with a stable code; the message says what to do. */
export class ServeMcpError extends Error {
  override name = 'ServeMcpError'
  constructor(readonly code: ServeMcpErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
  }
}
