import { createHash, timingSafeEqual } from 'node:crypto'
import { isIP } from 'node:net'

// What every loopback server of ours (serve-a2a, serve-mcp, the console) checks before anything else:
// the bind is loopback unless configured (`bindRefusal`), the Host header names us (a DNS-rebinding page cannot), and
// a browser's Origin is our own.

/** Whether `host` (a bind address or a host name) is loopback: 127.0.0.0/8, ::1, localhost. */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase()
  if (bare === 'localhost' || bare === '::1') return true
  return isIP(bare) === 4 && bare.startsWith('127.')
}

/** What a server of ours is asked to bind, for `bindRefusal`. */
export interface BindRequest {
  /** The address to bind. */
  host: string
  /** Whether every request must carry a credential (a token, a key). */
  credential: boolean
  /** The operator said yes to serving beyond this machine (`allowRemote: true`). */
  allowRemote: boolean
}

/**
 * The one rule every server of ours (the console, serve-a2a, serve-mcp over HTTP) applies to its bind:
 * loopback is always fine; any other address needs a credential on every request AND `allowRemote:
 * true`, because the credential then crosses the network in clear text unless TLS is put in front.
 * Returns why the bind is refused (for the plugin's INVALID_CONFIG error), or undefined.
 */
export function bindRefusal(bind: BindRequest): string | undefined {
  if (isLoopback(bind.host)) return undefined
  if (!bind.credential) {
    return `host ${bind.host} is not loopback, and requests there would need no credential: bind 127.0.0.1 (or ::1, localhost), or require a credential and set allowRemote: true.`
  }
  if (!bind.allowRemote) {
    return `host ${bind.host} is not loopback: bind 127.0.0.1, or set allowRemote: true if you mean to serve the network (the credential then crosses it in clear text unless TLS is in front).`
  }
  return undefined
}

/** `Authorization: Bearer <token>`: the scheme in any case, then spaces, the token, optional trailing spaces. */
const BEARER = /^Bearer +(\S+) *$/i

/**
 * The token of an `Authorization: Bearer <token>` header, or undefined. A header longer than
 * `maxToken` plus room for the scheme is not read (no hashing of megabytes); compare the token
 * with `sameSecret`.
 */
export function bearerToken(header: string | undefined, maxToken: number): string | undefined {
  if (typeof header !== 'string' || header.length > maxToken + 16) return undefined
  return BEARER.exec(header)?.[1]
}

/**
 * Whether a configured bearer token can be presented as one (`Authorization: Bearer <token>`, which `bearerToken` reads
 * back): `min`-`max` printable ASCII characters, no spaces. The one rule of every token our servers take from config.
 */
export function isTokenShape(token: string, max: number, min = 1): boolean {
  return token.length >= min && token.length <= max && /^[\x21-\x7e]+$/.test(token)
}

/** `host:port` as it appears in a Host header (IPv6 in brackets). */
export function hostHeader(host: string, port: number): string {
  const bare = host.replace(/^\[|\]$/g, '')
  return `${isIP(bare) === 6 ? `[${bare}]` : bare}:${port}`.toLowerCase()
}

/**
 * The Host headers accepted by default: on a loopback bind the loopback names with the bound
 * port; otherwise the bound address and port. The host of a public URL is added by the caller.
 */
export function defaultHosts(bind: string, port: number): string[] {
  if (isLoopback(bind)) return [hostHeader('127.0.0.1', port), hostHeader('localhost', port), hostHeader('::1', port)]
  return [hostHeader(bind, port)]
}

/** Origins (scheme://host[:port]) of the given Host values, over http. */
export function originsOf(hosts: string[]): string[] {
  return hosts.map((host) => `http://${host}`)
}

/** The Host value of a URL (default ports omitted, as clients send it). */
export function urlHost(url: URL): string {
  return url.host.toLowerCase()
}

/** The host part of a URL for `host` (IPv6 in brackets). */
export function hostForUrl(host: string): string {
  const bare = host.replace(/^\[|\]$/g, '')
  return isIP(bare) === 6 ? `[${bare}]` : bare
}

/**
 * Whether a presented secret equals the expected one, compared as SHA-256 digests in constant
 * time (the length of neither leaks). Callers cap `presented` before hashing it.
 */
export function sameSecret(presented: string, expected: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest()
  return timingSafeEqual(digest(presented), digest(expected))
}
