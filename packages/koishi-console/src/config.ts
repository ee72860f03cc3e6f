import { Schema } from 'cordis'
import { count, duration, unsetGroup } from '@cordis-subagents/shared'
import type { Transport } from '@cordis-subagents/console'

export interface Config {
  viewAuthority: number
  actAuthority: number
  maxTrees: number
  maxNodesPerTree: number
  maxTranscriptEntries: number
  maxEntryChars: number
  flushInterval: number
  transports?: Record<string, Transport>
}

/** Koishi's authority levels: 1 a user, 2 trusted, 3 an assistant, 4 an admin, 5 the owner. */
const authority = () => Schema.natural().min(1).max(5)

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  viewAuthority: authority().default(3)
    .description('Authority a console user needs to see the page, the trees and transcripts (with @koishijs/plugin-auth loaded; without it the console has no users and everyone who reaches it sees the page).'),
  actAuthority: authority().default(4)
    .description('Authority a console user needs to cancel a child, answer its question or send it a message (with @koishijs/plugin-auth loaded).'),
  maxTrees: count({ min: 1, max: 1000 }).default(20).description('Root runs (trees) kept, live and recent; past it the oldest ended tree is dropped, else the oldest.'),
  maxNodesPerTree: count({ min: 1, max: 10_000 }).default(256).description('Delegations shown per tree; more are counted as dropped.'),
  maxTranscriptEntries: count({ min: 10, max: 100_000 }).default(500)
    .description('Progress entries kept per child whose transcript is not in this process (ACP, A2A): a ring, the oldest go first.'),
  maxEntryChars: count({ min: 100, max: 1_000_000 }).default(4000)
    .description('Longest text of one transcript entry, progress line or output shown (characters; longer ones are cut and marked).'),
  flushInterval: duration({ min: 10, max: 10_000 }).default(100).description('Changes are coalesced and sent to the console at most this often (ms).'),
  transports: unsetGroup(Schema.dict(Schema.union(['spawn', 'fork', 'acp', 'a2a', 'remote'] as const)))
    .description('The transport shown per provider name, where the guess is wrong.'),
})
