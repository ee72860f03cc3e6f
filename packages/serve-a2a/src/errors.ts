import type { Response } from 'express'
import { CodedError } from '@cordis-subagents/shared'

/** Stable codes of every refusal and load failure (README: Errors). */
export type ServeA2aCode =
  | 'INVALID_CONFIG'
  | 'MISSING_CREDENTIAL'
  | 'LISTEN_FAILED'
  | 'STORE_UNAVAILABLE'
  | 'DUPLICATE_LOAD'
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN_HOST'
  | 'FORBIDDEN_ORIGIN'
  | 'BODY_TOO_LARGE'
  | 'RATE_LIMITED'
  | 'TOO_MANY_TASKS'
  | 'TOO_MANY_SUBSCRIPTIONS'
  | 'INVALID_PARAMS'
  | 'NOT_FOUND'
  | 'HOST_STOPPING'

export class ServeA2aError extends CodedError<ServeA2aCode> {
  override name = 'ServeA2aError'
}

/** HTTP status and JSON-RPC error code of each refusal made before the SDK sees a request. */
type LoadFailure = 'INVALID_CONFIG' | 'MISSING_CREDENTIAL' | 'LISTEN_FAILED' | 'STORE_UNAVAILABLE' | 'DUPLICATE_LOAD'
const REFUSALS: Record<Exclude<ServeA2aCode, LoadFailure>, { status: number; rpc: number }> = {
  UNAUTHENTICATED: { status: 401, rpc: -32050 },
  FORBIDDEN_HOST: { status: 403, rpc: -32051 },
  FORBIDDEN_ORIGIN: { status: 403, rpc: -32052 },
  BODY_TOO_LARGE: { status: 413, rpc: -32053 },
  RATE_LIMITED: { status: 429, rpc: -32054 },
  TOO_MANY_TASKS: { status: 429, rpc: -32055 },
  TOO_MANY_SUBSCRIPTIONS: { status: 429, rpc: -32056 },
  // JSON-RPC's own "invalid params": every A2A client knows it.
  INVALID_PARAMS: { status: 400, rpc: -32602 },
  NOT_FOUND: { status: 404, rpc: -32601 },
  // The host is stopping and did not look at the request: a client may send it elsewhere.
  HOST_STOPPING: { status: 503, rpc: -32057 },
}

export type RefusalCode = keyof typeof REFUSALS

/** The JSON-RPC error code of a refusal (for clients and tests). */
export function refusalRpcCode(code: RefusalCode): number {
  return REFUSALS[code].rpc
}

/**
 * Answers a request with an HTTP status and a JSON-RPC error body: `{ jsonrpc, id: null, error:
 * { code, message, data: { code } } }`. The id is null: the body was not (or not yet) trusted.
 */
export function refuse(res: Response, code: RefusalCode, message: string, headers: Record<string, string> = {}): void {
  const { status, rpc } = REFUSALS[code]
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value)
  res.status(status).json({ jsonrpc: '2.0', id: null, error: { code: rpc, message, data: { code } } })
}
