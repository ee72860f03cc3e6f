/**
 * Checking an agent card's signature (A2A 1.0 `AgentCardSignature`: JWS over the canonical card)
 * against a key the config gives: `cardKey` (one public key) or `cardJwksUrl` (a JWKS, read with
 * the card's bounds each time a card is read). The card's own `jku` is never followed: a card
 * cannot choose the key it is checked with.
 */
import { createPublicKey, type KeyObject } from 'node:crypto'
import { type AgentCard, canonicalizeAgentCard } from '@a2a-js/sdk'
import { base64url, decodeProtectedHeader, flattenedVerify } from 'jose'
import { describeError, headChars } from '@cordis-subagents/shared'
import { raiseAdvice } from './bounded-fetch.js'
import { A2aError } from './errors.js'

/** Most keys looked at in a JWKS. */
const MAX_JWKS_KEYS = 64
/** Most signatures of one card tried (each costs a verification). */
const MAX_SIGNATURES = 8
/** The algorithms a card may be signed with (asymmetric only: `none` and HMAC never verify a card). */
const ALGORITHMS = ['ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519', 'RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512']

/** Checks a card (its JSON as read); rejects `A2A_CARD_UNVERIFIED` saying why. */
export type CardVerifier = (raw: Record<string, unknown>, where: string) => Promise<void>

export interface VerifyOptions {
  /** A public key: a JWK (object or JSON) or a SPKI PEM. */
  cardKey?: unknown
  cardJwksUrl?: string
}

/** The verifier the options ask for, or none (unsigned cards are then taken as they are). Throws `A2A_INVALID_CONFIG` for a bad key. */
export function cardVerifier(
  options: VerifyOptions, cardFetch: typeof fetch, urlProblem: (url: URL) => string | undefined,
): CardVerifier | undefined {
  const { cardKey, cardJwksUrl } = options
  if (cardKey !== undefined && cardJwksUrl !== undefined) throw invalid('cardKey and cardJwksUrl are both set; give one.')
  if (cardKey !== undefined) {
    const key = publicKeyOf(cardKey)
    const keyId = typeof cardKey === 'object' ? (cardKey as { kid?: unknown }).kid : jwkOf(cardKey)?.kid
    return verifying(async (kid) => {
      if (typeof keyId === 'string' && keyId !== kid) throw new Error(`the signature's kid ${JSON.stringify(kid)} is not the configured key's (${JSON.stringify(keyId)})`)
      return key
    })
  }
  if (cardJwksUrl !== undefined) {
    let url: URL
    try {
      url = new URL(cardJwksUrl)
    } catch {
      throw invalid(`cardJwksUrl ${JSON.stringify(cardJwksUrl)} is not a URL.`)
    }
    const problem = urlProblem(url)
    if (problem) throw invalid(`cardJwksUrl ${url.href} cannot be used: ${problem}.`)
    return async (raw, where) => {
      const keys = await readJwks(url, cardFetch)
      await verifying(async (kid) => {
        const jwk = keys.find((entry) => entry.kid === kid)
        if (!jwk) throw new Error(`no key with kid ${JSON.stringify(kid)} in the JWKS at ${url.href}`)
        return publicKeyOf(jwk)
      })(raw, where)
    }
  }
  return undefined
}

function verifying(keyFor: (kid: string) => Promise<KeyObject>): CardVerifier {
  return async (raw, where) => {
    const signatures = Array.isArray(raw.signatures) ? raw.signatures.slice(0, MAX_SIGNATURES) : []
    if (!signatures.length) {
      throw new A2aError('A2A_CARD_UNVERIFIED', `The agent card at ${where} is not signed, and this provider is configured to check its signature (cardKey / cardJwksUrl).`)
    }
    let payload: string
    try {
      payload = base64url.encode(canonicalizeAgentCard(raw as unknown as AgentCard))
    } catch (error) {
      throw new A2aError('A2A_CARD_UNVERIFIED', `The agent card at ${where} cannot be put in canonical form to check its signature: ${describeError(error).slice(0, 200)}`)
    }
    const failures: string[] = []
    for (const entry of signatures as Array<{ protected?: unknown; signature?: unknown; header?: unknown }>) {
      try {
        if (typeof entry?.protected !== 'string' || typeof entry.signature !== 'string') throw new Error('not a JWS (protected, signature)')
        const header = decodeProtectedHeader({ protected: entry.protected })
        if (typeof header.kid !== 'string' || !header.alg) throw new Error('its protected header has no kid or alg')
        const key = await keyFor(header.kid)
        const unprotected = entry.header && typeof entry.header === 'object' ? entry.header as Record<string, unknown> : undefined
        const jws = { payload, protected: entry.protected, signature: entry.signature, header: unprotected }
        await flattenedVerify(jws, key, { algorithms: ALGORITHMS })
        return
      } catch (error) {
        failures.push(headChars(describeError(error), 200))
      }
    }
    throw new A2aError('A2A_CARD_UNVERIFIED', `The agent card at ${where} does not verify with the configured key (changed after signing, or signed by another key): ${failures.join('; ')}.`)
  }
}

async function readJwks(url: URL, cardFetch: typeof fetch): Promise<Array<Record<string, unknown>>> {
  let parsed: unknown
  try {
    const response = await cardFetch(url, { headers: { Accept: 'application/json' } })
    const text = await response.text()
    if (response.status !== 200) throw new Error(`HTTP ${response.status}`)
    parsed = JSON.parse(text)
  } catch (error) {
    const why = `${describeError(error).slice(0, 300)}.${raiseAdvice(error, 'its host')}`
    throw new A2aError('A2A_CARD_UNVERIFIED', `Could not read the JWKS at ${url.href} to check the agent card's signature: ${why}`)
  }
  const keys = (parsed as { keys?: unknown } | undefined)?.keys
  if (!Array.isArray(keys)) throw new A2aError('A2A_CARD_UNVERIFIED', `The JWKS at ${url.href} has no keys array.`)
  return keys.slice(0, MAX_JWKS_KEYS).filter((key): key is Record<string, unknown> => !!key && typeof key === 'object')
}

function jwkOf(value: unknown): Record<string, unknown> | undefined {
  if (value && typeof value === 'object') return value as Record<string, unknown>
  if (typeof value === 'string' && value.trim().startsWith('{')) {
    try {
      return JSON.parse(value) as Record<string, unknown>
    } catch {}
  }
  return undefined
}

function publicKeyOf(value: unknown): KeyObject {
  try {
    const jwk = jwkOf(value)
    if (jwk) {
      // Only the public members: a private JWK given by mistake is not kept.
      const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...members } = jwk
      return createPublicKey({ key: members as never, format: 'jwk' })
    }
    if (typeof value === 'string') return createPublicKey(value.trim())
  } catch {}
  throw invalid('cardKey is not a public key (a JWK, as an object or JSON, or a SPKI PEM).')
}

function invalid(problem: string): A2aError {
  return new A2aError('A2A_INVALID_CONFIG', `provider-a2a: config.${problem}`)
}
