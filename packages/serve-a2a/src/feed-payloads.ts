import { createHash } from 'node:crypto'
import type { TaskRef } from './task-ref.js'

/** The first field of every payload this version sends; a payload of any other shape is ignored. */
const VERSION = '1'
const HEX = /^[0-9a-f]{64}$/

/**
 * A task's name on the feed: SHA-256 (hex) of its key (tenant, credential scope, id), 64 characters
 * whatever the key. JSON keeps the parts apart (no separator a part could hold).
 */
export function digestOfRef(ref: TaskRef): string {
  return sha256(JSON.stringify([ref.tenant, ref.scope, ref.id]))
}

/** A lease's name on the feed (`movedChannel`): 64 characters whatever the host's name. */
export function digestOfLease(leaseId: string): string {
  return sha256(leaseId)
}

/** `taskChannel` and `cancelChannel`: `1 <task digest>`, 66 bytes. */
export function taskPayload(ref: TaskRef): string {
  return `${VERSION} ${digestOfRef(ref)}`
}

/** `movedChannel`: `1 <task digest> <claiming lease digest>`, 131 bytes. */
export function movedPayload(ref: TaskRef, leaseId: string): string {
  return `${VERSION} ${digestOfRef(ref)} ${digestOfLease(leaseId)}`
}

/** The digests of a payload of this version (one, or two for `movedChannel`), or undefined for anything else. */
export function readPayload(payload: string, parts: 1 | 2): string[] | undefined {
  if (payload.length !== 1 + 65 * parts) return undefined
  const [version, ...digests] = payload.split(' ')
  return version === VERSION && digests.length === parts && digests.every((digest) => HEX.test(digest)) ? digests : undefined
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex')
}
