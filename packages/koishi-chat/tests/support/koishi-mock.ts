// koishi-chat alone in a Koishi 4.18 App (Koishi's CommonJS build, as `koishi start` runs it), with the
// mock adapter and the memory database, and `agents` / `subagents` stand-ins: enough for the commands,
// the seam and the platform's events, without a delegation tree. Our plugin is the ESM the specs import.
import { createRequire } from 'node:module'
import * as chat from '@cordis-subagents/koishi-chat'

const require = createRequire(import.meta.url)

interface MockClient { receive(content: string): Promise<string[]> }
interface MockBot {
  selfId: string
  session(event: Record<string, unknown>): unknown
  dispatch(session: unknown): void
  sendMessage(...args: unknown[]): Promise<string[]>
}
export interface MockApp {
  subagentChat: chat.SubagentChat
  bots: MockBot[]
  mock: { client(userId: string, channelId?: string): MockClient, initUser(id: string, authority?: number): Promise<void> }
  plugin(plugin: unknown, config?: unknown): MockFork
  command(name: string): { action(act: (argv: { session: unknown }) => string): void }
  provide(name: string, value: unknown, builtin?: boolean): void
  on(name: string, listener: (session: { elements: unknown[] }) => void): () => void
  start(): Promise<void>
  stop(): Promise<void>
}

/** A loaded plugin: `update` is what Koishi's loader calls when its config changes (the console's form). */
export interface MockFork {
  dispose(): void
  update(config: unknown, forced?: boolean): void
}

/** The service's events koishi-chat observes, to play them by hand. */
export type Observed = Record<string, (...args: unknown[]) => void>

/** The `subagents` stand-in's host verbs (a spec replaces any of them). */
export interface MockHost {
  pending(): unknown[]
  resume(runId: string, answer: string): Promise<unknown>
  cancel(runId: string, reason?: string): void
}

/**
 * The app, started (`database: false`: without the memory database; `agents`: the `agents` stand-in, `{}` by default);
 * `fork` is koishi-chat's load (a spec may dispose it and load the plugin again); `close()` unloads the mock adapter
 * first (its bot's dispose fails once the root's `bots` went).
 */
export async function mockApp(
  config: Partial<chat.Config> = {}, host: Partial<MockHost> = {}, options: { database?: boolean, agents?: unknown } = {},
): Promise<{ app: MockApp, observed: Observed, fork: MockFork, close(): Promise<void> }> {
  const { App } = require('koishi') as { App: new (config: unknown) => MockApp }
  const app = new App({})
  const observed: Observed = {}
  app.provide('agents', options.agents ?? {}, true)
  app.provide('subagents', {
    observe: (listeners: Observed) => {
      Object.assign(observed, listeners)
      return () => {}
    },
    pending: () => [],
    resume: async () => {},
    cancel: () => {},
    ...host,
  }, true)
  if (options.database !== false) app.plugin((require('@koishijs/plugin-database-memory') as { default: unknown }).default)
  const adapter = app.plugin((require('@koishijs/plugin-mock') as { default: unknown }).default)
  const fork = app.plugin(chat, chat.Config(config as never))
  await app.start()
  return { app, observed, fork, close: async () => { adapter.dispose(); await app.stop() } }
}
