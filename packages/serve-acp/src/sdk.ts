import { lazily } from '@cordis-subagents/shared'
import type { Config } from './config.js'

export type Sdk = typeof import('@agentclientprotocol/sdk')

/** The ACP SDK, imported on first use (its cold import costs ~0.3 s). */
export const loadSdk: () => Promise<Sdk> = lazily(() => import('@agentclientprotocol/sdk'))

/** The ACP protocol version this server speaks. */
const PROTOCOL_VERSION = 1

/** The `initialize` answer: the protocol version both speak, what this server serves, and who it is. */
export function initialized(clientVersion: number, config: Config, version: string, loadable: boolean) {
  return {
    protocolVersion: Math.min(clientVersion, PROTOCOL_VERSION),
    agentCapabilities: {
      loadSession: loadable,
      sessionCapabilities: { list: {}, close: {}, ...loadable ? { resume: {} } : {} },
      mcpCapabilities: { http: config.mcpServers.http, sse: false },
    },
    authMethods: [],
    agentInfo: { name: config.name, version, ...config.title ? { title: config.title } : {} },
  }
}
