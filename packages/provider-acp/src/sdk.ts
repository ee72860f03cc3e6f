import { readFileSync } from 'node:fs'
import type * as Acp from '@agentclientprotocol/sdk'
import { describeError, headChars, lazily } from '@cordis-subagents/shared'

export type Sdk = typeof import('@agentclientprotocol/sdk')

/** The ACP SDK, imported on first use (its cold import costs ~0.3 s). */
export const loadSdk: () => Promise<Sdk> = lazily(() => import('@agentclientprotocol/sdk'))

/** The only ACP protocol version this client speaks. */
export const PROTOCOL_VERSION = 1

/** How this client introduces itself in `initialize`; the version is this package's. */
export const CLIENT_INFO = {
  name: 'cordis-subagents',
  title: 'cordis-subagents provider-acp',
  version: packageVersion(),
}

/**
 * Largest single ACP message (one JSON line) read from an agent. Half the SDK's default: an
 * agent streams text in chunks, but a tool update may carry a whole file.
 */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024

/** JSON-RPC code ACP uses for "authentication required". */
const AUTH_REQUIRED_CODE = -32000
/** JSON-RPC code of an `initialize` the agent refuses for its protocol version. */
export const UNSUPPORTED_VERSION_CODE = -32022
const AUTH_MESSAGE = /auth(?:entication|orization)?\s+required|not\s+(?:logged|signed)\s+in|login\s+required|unauthenticated/i
/** Longest agent-chosen text (an error message, a permission title) put into a diagnostic. */
const AGENT_TEXT_CHARS = 1024

/** Agent-chosen text, capped first (everything after this is linear in the cap). */
export function agentText(text: string, maxChars = AGENT_TEXT_CHARS): string {
  return headChars(text, maxChars, '…')
}

/**
 * "Internal error: model said 401 (code -32603; data: {…})": the agent's message and data, each
 * capped before anything else looks at them.
 */
export function describeRequestError(error: Acp.RequestError): string {
  let data = ''
  if (error.data !== undefined && error.data !== null) {
    try {
      const text = typeof error.data === 'string' ? error.data : JSON.stringify(error.data)
      if (text) data = `; data: ${agentText(text, 512)}`
    } catch {
      // unserializable data is left out
    }
  }
  return `${agentText(String(error.message))} (code ${error.code}${data})`
}

/** Whether the agent says it needs a login (by the ACP code, or in its own words). */
export function isAuthError(error: Acp.RequestError): boolean {
  return error.code === AUTH_REQUIRED_CODE || AUTH_MESSAGE.test(agentText(String(error.message)))
}

/** A thrown value described for a diagnostic, capped like any agent text. */
export function agentError(error: unknown): string {
  return agentText(describeError(error))
}

function packageVersion(): string {
  try {
    const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: unknown }
    if (typeof manifest.version === 'string' && manifest.version) return manifest.version
  } catch {
    // a bundled copy without its package.json still speaks the protocol
  }
  return '0.0.0'
}
