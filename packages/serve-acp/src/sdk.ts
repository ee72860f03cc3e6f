import { lazily } from '@cordis-subagents/shared'

export type Sdk = typeof import('@agentclientprotocol/sdk')

/** The ACP SDK, imported on first use (its cold import costs ~0.3 s). */
export const loadSdk: () => Promise<Sdk> = lazily(() => import('@agentclientprotocol/sdk'))

/** The ACP protocol version this server speaks. */
export const PROTOCOL_VERSION = 1
