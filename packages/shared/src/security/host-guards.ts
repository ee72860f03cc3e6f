import { createHash, timingSafeEqual } from 'node:crypto'
import { isIP } from 'node:net'

// What every loopback server of ours (serve-a2a, the console) checks before anything else: the
// bind is loopback unless configured, the Host header names us (a DNS-rebinding page cannot), and
// a browser's Origin is our own.

/** Whether `host` (a bind address or a host name) is loopback: 127.0.0.0/8, ::1, localhost. */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase()
  if (bare === 'localhost' || bare === '::1') return true
  return isIP(bare) === 4 && bare.startsWith('127.')
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
