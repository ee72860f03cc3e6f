import { createHmac, hash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { Request } from 'express'
import { type AuthMode, type Config } from './config.js'
import { ServeA2aError } from './errors.js'
import { bearerToken, isTokenShape } from '@cordis-subagents/shared'

/** Scope of tasks started without a credential (`auth: none`). */
export const ANONYMOUS = 'anonymous'

/** Longest credential read from a header; longer ones are refused unread (no hashing of megabytes). */
const MAX_CREDENTIAL_LENGTH = 4096

/**
 * The accepted credentials, kept only as SHA-256 digests. Each one is its own scope, named by a
 * keyed hash of the credential (`cred-<32 hex>`, HMAC-SHA256 of its digest): the same token gets
 * the same scope on every host holding the same key, whatever its position in each host's list,
 * and the scope, never the value, is what tasks are filed under and what is logged. The key is
 * random per process until `useScopeKey` gives the one of a shared store.
 */
export class Credentials {
  private readonly digests: Buffer[]
  private scopes: string[] = []

  private constructor(values: string[], readonly mode: AuthMode, private readonly header: string) {
    this.digests = values.map(digest)
    this.useScopeKey(randomBytes(32))
  }

  /** Names every scope with `key` (the shared store's: all hosts of a deployment file a token's tasks alike). */
  useScopeKey(key: Buffer): void {
    this.scopes = this.digests.map((known) => `cred-${createHmac('sha256', key).update(known).digest('hex').slice(0, 32)}`)
  }

  /**
   * The credentials of a config: `tokens`, then the values of `tokensFromEnv`. With none in a
   * credential mode, one random token is generated (returned as `generated`: hand it to clients).
   */
  static fromConfig(config: Config, env: NodeJS.ProcessEnv): { credentials: Credentials; generated?: string } {
    const values: string[] = []
    config.tokens.forEach((token, index) => {
      if (!token) throw new ServeA2aError('INVALID_CONFIG', `tokens[${index}] is empty; remove it or give it a value.`)
      values.push(token)
    })
    for (const name of config.tokensFromEnv) {
      const value = env[name]
      if (!value) throw new ServeA2aError('MISSING_CREDENTIAL', `tokensFromEnv: the environment variable ${name} is not set (or empty); set it, or remove it from tokensFromEnv.`)
      values.push(value)
    }
    for (const value of values) {
      if (!isTokenShape(value, MAX_CREDENTIAL_LENGTH)) {
        throw new ServeA2aError('INVALID_CONFIG', `a configured token is not 1-${MAX_CREDENTIAL_LENGTH} printable ASCII characters without spaces (its value is not shown).`)
      }
    }
    let generated: string | undefined
    if (config.auth !== 'none' && values.length === 0) values.push(generated = randomBytes(32).toString('base64url'))
    return { credentials: new Credentials(config.auth === 'none' ? [] : values, config.auth, config.apiKeyHeader), generated }
  }

  get count(): number {
    return this.digests.length
  }

  /** What the request presents: the bearer token or the API key, or undefined. */
  presented(req: Request): string | undefined {
    if (this.mode === 'bearer') {
      return bearerToken(req.headers.authorization, MAX_CREDENTIAL_LENGTH)
    }
    const value = req.headers[this.header.toLowerCase()]
    if (typeof value !== 'string' || value.length > MAX_CREDENTIAL_LENGTH) return undefined
    return value
  }

  /**
   * The scope of the credential `value` matches, or undefined. Every digest is compared, in
   * constant time, whatever matched first, so timing tells nothing about which one or how close.
   */
  match(value: string): string | undefined {
    const given = digest(value)
    let found = -1
    this.digests.forEach((known, index) => {
      if (timingSafeEqual(known, given) && found < 0) found = index
    })
    return found < 0 ? undefined : this.scopes[found]
  }
}

/** SHA-256 of the UTF-8 text, one-shot (no Hash object per request). */
function digest(value: string): Buffer {
  return hash('sha256', value, 'buffer')
}
