// Reading and parsing one version of the config file, bounded: it is opened once, refused unless
// it is a regular file, read to at most `maxBytes`, and parsed from that text (never read again).
import { createRequire } from 'node:module'
import { constants, type FileHandle, open } from 'node:fs/promises'
import type { Stats } from 'node:fs'
import { schema as loaderSchema } from '@cordisjs/loader'
import type { RejectCode } from './errors.js'

type ReadResult = { text: string } | { code: RejectCode; reason: string }

const CHUNK = 64 * 1024
// Without O_NONBLOCK, opening a FIFO waits for a writer, for ever, on a thread of libuv's pool.
const FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0)

export async function readConfigText(file: string, maxBytes: number): Promise<ReadResult> {
  const handle = await open(file, FLAGS)
  try {
    const stats = await handle.stat()
    if (!stats.isFile()) {
      return { code: 'CONFIG_NOT_A_FILE', reason: `it is ${kindOf(stats)}, not a regular file; put a regular file (or a symlink to one) under that name` }
    }
    if (stats.size > maxBytes) return tooLarge(`${stats.size} bytes`, maxBytes)
    const text = await readAtMost(handle, maxBytes)
    return text === undefined ? tooLarge('it grew while being read to', maxBytes) : { text }
  } finally {
    await handle.close()
  }
}

/** The handle's bytes as UTF-8, or undefined once there are more than `maxBytes`. */
async function readAtMost(handle: FileHandle, maxBytes: number): Promise<string | undefined> {
  const chunks: Buffer[] = []
  let total = 0
  for (;;) {
    const chunk = Buffer.allocUnsafe(Math.min(CHUNK, maxBytes + 1 - total))
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, null)
    if (!bytesRead) return Buffer.concat(chunks, total).toString('utf8')
    chunks.push(chunk.subarray(0, bytesRead))
    total += bytesRead
    if (total > maxBytes) return undefined
  }
}

function tooLarge(size: string, maxBytes: number): ReadResult {
  return { code: 'CONFIG_TOO_LARGE', reason: `${size}, more than maxBytes (${maxBytes}); shrink the file or raise maxBytes` }
}

function kindOf(stats: Stats): string {
  if (stats.isFIFO()) return 'a FIFO (named pipe)'
  if (stats.isCharacterDevice()) return 'a character device'
  if (stats.isBlockDevice()) return 'a block device'
  if (stats.isSocket()) return 'a socket'
  if (stats.isDirectory()) return 'a directory'
  return 'something else'
}

interface Yaml {
  load(text: string, options: { schema: unknown }): unknown
}
let yaml: Yaml | undefined

/**
 * The loader's own reader applied to `text`: its YAML schema (the `!!js` tag) with js-yaml 4, the major the
 * loader reads with (declared here; the typings only cover 5), or JSON. A JS module config (no `type`) is imported by the loader.
 */
export async function parseConfigText(text: string, type: string | undefined, readModule: () => Promise<unknown>): Promise<unknown> {
  if (type === 'application/json') return JSON.parse(text)
  if (type !== 'application/yaml') return readModule()
  yaml ??= createRequire(import.meta.url)('js-yaml') as Yaml
  return yaml.load(text, { schema: loaderSchema })
}
