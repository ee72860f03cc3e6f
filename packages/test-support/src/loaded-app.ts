// A real @cordisjs/loader app on a cordis.yml in a temp dir, for the specs where a reload or an unload matters: the
// loader's own entry API (`create` adds an entry, `update` writes the file and reloads it, `remove` unloads it) and a
// clean stop that leaves the file as it is.
import { mkdtempSync, writeFileSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Context } from 'cordis'
import { loaderApp } from './loader-app.js'
import { eventually } from './wait.js'

/** What these specs use of @cordisjs/loader 0.13's loader service. */
interface LoaderView {
  ctx: Context
  files: Record<string, { writeTask?: NodeJS.Timeout }>
  entries(): Iterable<{ options: { id: string }; fork?: { status: number }; refresh(): Promise<void> }>
  /** Adds an entry at the end of cordis.yml and loads it. */
  create(options: { id: string; name: string; isolate?: Record<string, true>; config: unknown }): Promise<string>
  update(id: string, options: { config: unknown }): Promise<string>
  remove(id: string): void
}

/** cordis' ScopeStatus values. */
export const ACTIVE = 2
export const FAILED = 3

export interface LoadedApp {
  ctx: Context
  loader: LoaderView
  /** Every `internal/error` of the app so far (a failed load is one). */
  errors: unknown[]
  /** The status of entry `id`'s load (ACTIVE, FAILED...), undefined when it has none. */
  status(id: string): number | undefined
  /** Stops it as config-watch's `stopLoaderApp` does (entries newest first, the file left as it is), then removes the dir. */
  stop(): Promise<void>
}

/** The entries such an app starts with unless told otherwise: the tool registry, the agent runtime and the subagents service. */
const CORE_ENTRIES = `- id: tools
  name: '@cordis-subagents/tools'
- id: agents
  name: '@cordis-subagents/agent'
- id: subagents
  name: '@cordis-subagents/subagents-service'`

/**
 * Starts a loader app on `core` then `yaml` (entries of a cordis.yml) in a temp dir named after `prefix`; its entries load in
 * the background: a spec waits for what it needs.
 */
export async function startLoadedApp(yaml: string, options: { core?: string; prefix?: string } = {}): Promise<LoadedApp> {
  const dir = mkdtempSync(join(tmpdir(), options.prefix ?? 'loaded-app-'))
  writeFileSync(join(dir, 'cordis.yml'), `${options.core ?? CORE_ENTRIES}\n${yaml}`)
  const ctx = loaderApp(join(dir, 'cordis.yml'), dir)
  const errors: unknown[] = []
  ctx.on('internal/error', (error) => void errors.push(error))
  await ctx.start()
  const loader = await eventually(() => ctx.get('loader') as LoaderView | undefined, 'the loader service')
  const entry = (id: string) => [...loader.entries()].find((each) => each.options.id === id)
  return {
    ctx, loader, errors,
    status: (id) => entry(id)?.fork?.status,
    stop: async () => {
      // Every entry reads as "not ready": the loader stops it without marking it disabled or writing the file.
      const hold = (ctx as unknown as { on(name: string, listener: () => boolean): () => void }).on('loader/entry-check', () => true)
      try {
        for (const each of [...loader.entries()].reverse()) await each.refresh()
        await ctx.lifecycle.flush()
        for (const runtime of [...ctx.registry.values()]) {
          for (const fork of [...runtime.children]) if (fork.parent === loader.ctx) fork.dispose()
        }
      } finally {
        hold()
      }
      await ctx.stop()
      for (const file of Object.values(loader.files)) clearTimeout(file.writeTask)
      // A write of cordis.yml the loader began before the stop may still add its file while the dir goes. Removed
      // asynchronously: the sync rm blocks the loop that write needs to finish, and retries only the last rmdir, not
      // what was added meanwhile; the async one retries the whole removal.
      await rm(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 })
    },
  }
}

/** The code of an error, if it has one. */
export function codeOf(error: unknown): unknown {
  return (error as { code?: unknown } | undefined)?.code
}
