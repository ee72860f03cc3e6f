// node:fs for the conformance CLI on Node < 22 (see node20.mjs).
export * from 'node:fs'

export function globSync() {
  throw new Error('this conformance command needs Node 22 (fs.globSync)')
}
