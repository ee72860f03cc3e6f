import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto'
import { AgentCard, type AgentCardSignatureGenerator, generateAgentCardSignature } from '@a2a-js/sdk'
import { ServeA2aError } from './errors.js'

/** `signing` in the config: the key the agent card is signed with (JWS, A2A 1.0 `AgentCardSignature`). */
export interface SigningConfig {
  /** The private key: a PKCS#8 PEM, or a private JWK as JSON. Prefer `keyFromEnv`. */
  key?: string
  /** Name of an environment variable holding the key (PEM or JWK JSON). */
  keyFromEnv?: string
  /** The key id (`kid` of the protected header): how a verifier picks the public key from its JWKS. */
  kid?: string
  /** Where the public keys are published (`jku` of the protected header); informative, a verifier uses its own. */
  jku?: string
}

/** The JWS algorithm of each key type we sign with. */
function algorithmOf(key: KeyObject): string {
  const type = key.asymmetricKeyType
  if (type === 'ed25519') return 'EdDSA'
  if (type === 'rsa' || type === 'rsa-pss') return type === 'rsa' ? 'RS256' : 'PS256'
  if (type === 'ec') {
    const curve = key.asymmetricKeyDetails?.namedCurve
    const alg = { prime256v1: 'ES256', secp384r1: 'ES384', secp521r1: 'ES512' }[curve ?? '']
    if (alg) return alg
    throw new ServeA2aError('INVALID_CONFIG', `signing: an EC key on curve ${curve ?? '?'} cannot sign a card (P-256, P-384 or P-521).`)
  }
  throw new ServeA2aError('INVALID_CONFIG', `signing: a ${type ?? 'secret'} key cannot sign a card (an EC P-256/384/521, Ed25519 or RSA private key).`)
}

/** Reads the private key (PEM or JWK JSON) without ever putting its text in an error. */
function privateKeyOf(text: string): KeyObject {
  try {
    const trimmed = text.trim()
    return trimmed.startsWith('{') ? createPrivateKey({ key: JSON.parse(trimmed), format: 'jwk' }) : createPrivateKey(trimmed)
  } catch {
    throw new ServeA2aError('INVALID_CONFIG', 'signing: the key is not a private key (a PKCS#8 PEM or a private JWK); its value is not shown.')
  }
}

/** The card's signer and the public key a client verifies with (as a JWK carrying `kid` and `alg`). */
export interface CardSigner {
  sign: AgentCardSignatureGenerator
  publicJwk: Record<string, unknown>
}

/**
 * Reads `signing` at load (a bad or missing key fails the load). The signature is made once per card
 * (the card is public and unauthenticated: a request must not cost a signature).
 */
export function cardSigner(signing: SigningConfig | undefined, env: NodeJS.ProcessEnv): CardSigner | undefined {
  const { key, keyFromEnv, kid, jku } = signing ?? {}
  // The schema fills an absent `signing` with {}: nothing set is no signing.
  if (!key && !keyFromEnv && !kid && !jku) return undefined
  if (!kid) throw new ServeA2aError('INVALID_CONFIG', 'signing.kid is required: the key id a verifier picks the public key by.')
  if (key && keyFromEnv) throw new ServeA2aError('INVALID_CONFIG', 'signing: give the key once, in `key` or in `keyFromEnv`, not both.')
  const text = keyFromEnv ? env[keyFromEnv] : key
  if (keyFromEnv && !text) throw new ServeA2aError('MISSING_CREDENTIAL', `signing.keyFromEnv: the environment variable ${keyFromEnv} is not set (or empty).`)
  if (!text) throw new ServeA2aError('INVALID_CONFIG', 'signing: no key (give `key` or `keyFromEnv`, or remove `signing`).')
  const privateKey = privateKeyOf(text)
  if (privateKey.type !== 'private') throw new ServeA2aError('INVALID_CONFIG', 'signing: the key is not a private key.')
  const alg = algorithmOf(privateKey)
  const generate = generateAgentCardSignature(privateKey, { alg, kid, typ: 'JOSE', ...jku ? { jku } : {} })
  const signed = new WeakMap<AgentCard, Promise<AgentCard>>()
  // The signature covers the card's JSON form (what the card route serves, and what a verifier
  // canonicalizes: `canonicalizeAgentCard` reads its input as JSON); signing the SDK's in-memory card
  // would leave its security schemes out of the signed payload.
  const sign: AgentCardSignatureGenerator = (card) => {
    let done = signed.get(card)
    if (!done) signed.set(card, done = generate(AgentCard.toJSON(card) as AgentCard).then((json) => AgentCard.fromJSON(json)))
    return done
  }
  const publicJwk = { ...createPublicKey(privateKey).export({ format: 'jwk' }), kid, alg, use: 'sig' }
  return { sign, publicJwk }
}
