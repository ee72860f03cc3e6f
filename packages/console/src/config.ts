import { Schema } from 'cordis'
import { bindRefusal, count, duration, isTokenShape, unsetGroup } from '@cordis-subagents/shared'
import { ConsoleError } from './errors.js'

/** What a viewer of the page sees a child's transport as. */
export type Transport = 'spawn' | 'fork' | 'acp' | 'a2a' | 'remote'

export interface Config {
  host: string
  port: number
  token?: string
  allowedHosts?: string[]
  allowRemote: boolean
  maxTrees: number
  maxNodesPerTree: number
  maxTranscriptEntries: number
  maxEntryChars: number
  maxViewers: number
  maxViewerBufferBytes: number
  flushInterval: number
  transports?: Record<string, Transport>
}

/** Longest token accepted in config or read from a header (printable ASCII, no spaces). */
export const MAX_TOKEN_LENGTH = 512
/** Shortest configured token: a guessable one would make the credential decorative. */
const MIN_TOKEN_LENGTH = 16

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  host: Schema.string().default('127.0.0.1').description('Address to bind. Loopback by default; another address also needs `allowRemote`.'),
  port: Schema.natural().max(65535).default(0).description('Port to bind; 0 picks a free one (read `ctx.subagentConsole.url`).'),
  token: Schema.string().description(`The token the page and API require (${MIN_TOKEN_LENGTH}-${MAX_TOKEN_LENGTH} printable ASCII characters). Default: a random one per start, in \`ctx.subagentConsole.url\`.`),
  allowedHosts: unsetGroup(Schema.array(Schema.string())).description('Accepted `Host` headers. Default: the loopback names with the bound port (DNS rebinding protection).'),
  allowRemote: Schema.boolean().default(false).description('Allow binding a non-loopback address (the token then travels in clear text over the network).'),
  maxTrees: count({ min: 1, max: 1000 }).default(20).description('Root runs (trees) kept, live and recent; past it the oldest ended tree is dropped, else the oldest.'),
  maxNodesPerTree: count({ min: 1, max: 10_000 }).default(256).description('Delegations shown per tree; more are counted as dropped.'),
  maxTranscriptEntries: count({ min: 10, max: 100_000 }).default(500).description('Progress entries recorded per child whose transcript is not in this process (ACP, A2A): a ring, the oldest go first.'),
  maxEntryChars: count({ min: 100, max: 1_000_000 }).default(4000).description('Longest text of one transcript entry, progress line or output shown (characters; longer ones are cut and marked).'),
  maxViewers: count({ min: 1, max: 100 }).default(8).description('Live pages connected at once; one more is refused with `TOO_MANY_VIEWERS`.'),
  maxViewerBufferBytes: count({ min: 4096, max: 64 << 20 }).default(256 << 10).description('Bytes queued for one slow page before its updates are dropped; it gets a fresh snapshot once it has caught up.'),
  flushInterval: duration({ min: 10, max: 10_000 }).default(100).description('Updates are coalesced and sent to pages at most this often (ms).'),
  transports: unsetGroup(Schema.dict(Schema.union(['spawn', 'fork', 'acp', 'a2a', 'remote'] as const)))
    .description('The transport shown per provider name, where the guess is wrong (see README: Transports).'),
})

/** Validates a config past what the schema can say; throws `INVALID_CONFIG`. */
export function checkedConfig(input: Partial<Config> | undefined): Config {
  let config: Config
  try {
    config = Config((input ?? {}) as Config)
  } catch (error) {
    throw new ConsoleError('INVALID_CONFIG', `console: ${(error as Error).message}`)
  }
  const refused = bindRefusal({ host: config.host, credential: true, allowRemote: config.allowRemote })
  if (refused) throw new ConsoleError('INVALID_CONFIG', `console: ${refused}`)
  if (config.token !== undefined) {
    if (!isTokenShape(config.token, MAX_TOKEN_LENGTH, MIN_TOKEN_LENGTH)) {
      throw new ConsoleError('INVALID_CONFIG', `console: token must be ${MIN_TOKEN_LENGTH}-${MAX_TOKEN_LENGTH} printable ASCII characters without spaces (its value is not shown); or leave it out to get a random one.`)
    }
  }
  return config
}
