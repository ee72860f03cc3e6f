import type { AgentCard, SecurityScheme } from '@a2a-js/sdk'
import type { Config } from './config.js'

/** Where JSON-RPC is served, under the base URL. */
export const JSONRPC_PATH = '/a2a/jsonrpc'
/** Where the agent card is served (both versions: the `A2A-Version` header picks the shape). */
export const CARD_PATH = '/.well-known/agent-card.json'

const SCHEME = 'cordis'

/**
 * The agent card in its 1.0 shape. It declares the JSON-RPC interface twice, as 1.0 and as 0.3:
 * the SDK serves this card to a client asking for 1.0 (`A2A-Version: 1.0`) and derives the 0.3
 * card (top-level `url`, `protocolVersion`, `preferredTransport`, 0.3 `security`) for a client that
 * sends no version or 0.3. The security scheme says what every JSON-RPC call must carry.
 */
export function agentCard(config: Config, baseUrl: string): AgentCard {
  const url = `${baseUrl}${JSONRPC_PATH}`
  const schemes = securitySchemes(config)
  const requirements = Object.keys(schemes).map((name) => ({ schemes: { [name]: { list: [] } } }))
  const skills = config.skills.length ? config.skills : [{ id: 'general', name: config.name, description: config.description, tags: ['general'], examples: [] }]
  return {
    name: config.name,
    description: config.description,
    version: '0.1.0',
    supportedInterfaces: [
      { url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
      { url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '0.3' },
    ],
    provider: undefined,
    capabilities: { streaming: true, pushNotifications: config.push?.enabled ?? false, extensions: [] },
    securitySchemes: schemes,
    securityRequirements: requirements,
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: skills.map((skill) => ({
      // A2A 1.0 requires a skill's tags (a2a.proto: REQUIRED); a skill configured without any is tagged with its id.
      id: skill.id, name: skill.name, description: skill.description,
      tags: skill.tags?.length ? skill.tags : [skill.id], examples: skill.examples ?? [],
      inputModes: ['text/plain'], outputModes: ['text/plain'], securityRequirements: [],
    })),
    signatures: [],
  }
}

function securitySchemes(config: Config): Record<string, SecurityScheme> {
  if (config.auth === 'bearer') {
    return { [SCHEME]: { scheme: { $case: 'httpAuthSecurityScheme', value: { description: 'A bearer token the operator of this server gave you.', scheme: 'Bearer', bearerFormat: '' } } } }
  }
  if (config.auth === 'api-key') {
    return { [SCHEME]: { scheme: { $case: 'apiKeySecurityScheme', value: { description: 'An API key the operator of this server gave you.', location: 'header', name: config.apiKeyHeader } } } }
  }
  return {}
}
