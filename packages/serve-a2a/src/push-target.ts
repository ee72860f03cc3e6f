/**
 * Where a push notification may go (the SSRF guard): a webhook URL's host is resolved and every
 * address it resolves to must be public, unless the host or the address is allow-listed; the
 * connection then goes to the address that was checked (pinned), so a second DNS answer cannot swap
 * it (DNS rebinding).
 */
import { lookup } from 'node:dns/promises'
import { BlockList, isIP } from 'node:net'
import { isLoopback } from '@cordis-subagents/shared'

/** Ranges a webhook may not reach unless allow-listed: private, link-local, unique-local, multicast, reserved (loopback: `isLoopback`). */
const FORBIDDEN = new BlockList()
for (const [net, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) FORBIDDEN.addSubnet(net, prefix, 'ipv4')
// With the ranges that carry or reach an IPv4 address (NAT64 well-known and local-use, SIIT, 6to4, Teredo) and the
// deprecated site-local and discard-only ones: through a gateway on the network each could reach a private IPv4 host.
for (const [net, prefix] of [
  ['::', 128], ['fe80::', 10], ['fec0::', 10], ['fc00::', 7], ['ff00::', 8], ['64:ff9b::', 96], ['64:ff9b:1::', 48],
  ['::ffff:0:0:0', 96], ['2002::', 16], ['2001::', 32], ['100::', 64], ['2001:db8::', 32],
] as const) FORBIDDEN.addSubnet(net, prefix, 'ipv6')

/** The 8 16-bit groups of an IPv6 address (a dotted IPv4 tail counts as two). */
function groupsOf(address: string): number[] | undefined {
  let text = address.toLowerCase().replace(/%.*$/, '')
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number)
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head, tail] = text.split('::')
  const left = head ? head.split(':') : []
  const right = tail ? tail.split(':') : []
  const missing = 8 - left.length - right.length
  if (text.includes('::') ? missing < 0 : missing !== 0) return undefined
  return [...left, ...Array(text.includes('::') ? missing : 0).fill('0'), ...right].map((group) => parseInt(group, 16))
}

/** The IPv4 address an IPv4-mapped (::ffff:a.b.c.d) or IPv4-compatible (::a.b.c.d) IPv6 address carries. */
function embeddedIpv4(address: string): string | undefined {
  const groups = groupsOf(address)
  if (!groups || groups.some((group) => Number.isNaN(group))) return undefined
  const zeros = groups.slice(0, 5).every((group) => group === 0)
  const mapped = zeros && groups[5] === 0xffff
  const compatible = zeros && groups[5] === 0 && (groups[6] !== 0 || groups[7] > 1)
  if (!mapped && !compatible) return undefined
  return `${groups[6] >> 8}.${groups[6] & 255}.${groups[7] >> 8}.${groups[7] & 255}`
}

/** Why a webhook may not reach `address` (a literal IP), or undefined when it is public. */
function forbiddenAddress(address: string): string | undefined {
  const v4 = isIP(address) === 4 ? address : isIP(address) === 6 ? embeddedIpv4(address) : undefined
  if (isLoopback(v4 ?? address)) return `${address} is a loopback address`
  if (v4) return FORBIDDEN.check(v4, 'ipv4') ? `${address} is a private, loopback, link-local, multicast or reserved address` : undefined
  if (isIP(address) !== 6) return `${address} is not an IP address`
  return FORBIDDEN.check(address, 'ipv6') ? `${address} is a loopback, link-local, unique-local, multicast or reserved address` : undefined
}

export interface TargetPolicy {
  /** Host names and IP addresses a webhook may reach even when private (lower case). */
  allowHosts: Set<string>
  allowHttp: boolean
}

/** A webhook target that passed the guard: connect to `address` only. */
export interface PinnedTarget {
  url: URL
  address: string
  family: 4 | 6
}

/** Refused before any connection (a stable code and why). */
export class TargetRefused extends Error {
  constructor(readonly code: 'PUSH_TARGET_REFUSED', message: string) {
    super(message)
  }
}

/** Syntax only (at the time a config is set): an http(s) URL, no credentials, http only when allowed. */
export function urlProblem(text: string, policy: TargetPolicy): string | undefined {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return 'the push notification url is not a URL'
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return `the push notification url must be https (got ${url.protocol})`
  if (url.protocol === 'http:' && !policy.allowHttp) return 'the push notification url must be https (this server does not send to http: push.allowHttp)'
  if (url.username || url.password) return 'the push notification url may not carry credentials (use the token or authentication)'
  return undefined
}

/** Resolves and checks a webhook URL; rejects `TargetRefused` saying why. */
export async function pinTarget(text: string, policy: TargetPolicy): Promise<PinnedTarget> {
  const problem = urlProblem(text, policy)
  if (problem) throw new TargetRefused('PUSH_TARGET_REFUSED', problem)
  const url = new URL(text)
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase()
  const hostAllowed = policy.allowHosts.has(host)
  let addresses: Array<{ address: string; family: number }>
  if (isIP(host)) addresses = [{ address: host, family: isIP(host) }]
  else {
    try {
      addresses = await lookup(host, { all: true, verbatim: true })
    } catch (error) {
      throw new TargetRefused('PUSH_TARGET_REFUSED', `the push notification host ${host} does not resolve (${(error as NodeJS.ErrnoException).code ?? 'error'})`)
    }
  }
  if (!addresses.length) throw new TargetRefused('PUSH_TARGET_REFUSED', `the push notification host ${host} resolves to no address`)
  // Every address is checked: a name that resolves to one public and one private address is refused.
  for (const { address } of addresses) {
    const why = hostAllowed || policy.allowHosts.has(address.toLowerCase()) ? undefined : forbiddenAddress(address)
    if (why) throw new TargetRefused('PUSH_TARGET_REFUSED', `the push notification host ${host} is refused: ${why} (allow it with push.allowHosts)`)
  }
  const [first] = addresses
  return { url, address: first.address, family: first.family === 6 ? 6 : 4 }
}
