import { CROSSING_KEY } from '@cordis-subagents/shared'
import { AcpError } from './errors.js'

/** `_meta` keys the provider writes itself: the crossing and the W3C trace context. */
const OWN_KEYS = [CROSSING_KEY, 'traceparent', 'tracestate']

/**
 * The configured `sessionMeta`, checked at load: a plain object, and none of the provider's own
 * keys (those carry the delegation's limits and trace, which configuration must not replace).
 */
export function checkSessionMeta(meta: unknown): Record<string, unknown> {
  if (meta === undefined) return {}
  if (meta === null || typeof meta !== 'object' || Array.isArray(meta)) {
    throw new AcpError('ACP_INVALID_CONFIG', 'provider-acp: config.sessionMeta must be an object (the `_meta` fields to add to session/new).')
  }
  const own = Object.keys(meta).filter((key) => OWN_KEYS.includes(key))
  if (own.length) {
    throw new AcpError('ACP_INVALID_CONFIG', `provider-acp: config.sessionMeta must not set ${own.join(', ')}: the provider writes ${OWN_KEYS.join(', ')} itself.`)
  }
  return { ...meta as Record<string, unknown> }
}
