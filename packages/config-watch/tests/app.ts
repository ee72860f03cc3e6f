// A real @cordisjs/loader app on a real cordis.yml in a temp dir, and waits on its events.
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Context } from 'cordis'
import { eventually as until, loaderApp } from '@cordis-subagents/test-support'
import type {} from '@cordis-subagents/tools'
import { type CheckResult, stopLoaderApp } from '@cordis-subagents/config-watch'

/** The entries every test app has: two providers, a subagent tool on each, and the watcher. */
export function appConfig(options: { fork?: string; watch?: boolean; extra?: string } = {}): string {
  return `# a loader app with two providers and a tool on each
- id: tools
  name: '@cordis-subagents/tools'
- id: agents
  name: '@cordis-subagents/agent'
  config:
    model: test
- id: subagents
  name: '@cordis-subagents/subagents-service'
- id: spawn
  name: '@cordis-subagents/provider-spawn'
  config:
    name: spawn
- id: fork
  name: '@cordis-subagents/provider-fork'
  config:
    name: fork
${options.fork ?? ''}- id: tool-subagent
  name: '@cordis-subagents/subagent-tool'
  config:
    provider: spawn
- id: tool-subagent-fork
  name: '@cordis-subagents/subagent-tool'
  config:
    provider: fork
    toolName: subagent_fork
${options.watch === false ? '' : `- id: watch
  name: '@cordis-subagents/config-watch'
  config:
    debounce: 50
`}${options.extra ?? ''}`
}

const TOOLS = ['subagent', 'subagent_fork']

export interface TestApp {
  ctx: Context
  dir: string
  file: string
  /** Every `tools/changed` since the app settled: `removed subagent_fork`, `added subagent_fork`. */
  changes: string[]
  /** Every `config-watch/checked` result, in order. */
  checks: CheckResult[]
  /** What the loader did to each entry since the app settled: `reload fork`, `apply watch`, `unload x`. */
  entryEvents: string[]
  /**
   * Resolves with the next `config-watch/checked` result after the ones seen so far. A look that
   * found the file empty (an in-place write seen between its truncate and its write, on a slow
   * machine) is transient and skipped: the write's second event brings the next look.
   */
  nextCheck(timeout?: number): Promise<CheckResult>
  description(tool: string): string | undefined
  stop(): Promise<void>
}

export async function startTestApp(text = appConfig(), options: { beforeStart?: (ctx: Context) => void } = {}): Promise<TestApp> {
  const dir = mkdtempSync(join(tmpdir(), 'config-watch-'))
  const file = join(dir, 'cordis.yml')
  writeFileSync(file, text)
  const ctx = loaderApp(file)
  options.beforeStart?.(ctx)
  const checks: CheckResult[] = []
  let seen = 0
  const waiters = new Set<() => void>()
  ctx.on('config-watch/checked', (result) => {
    checks.push(result)
    for (const wake of waiters) wake()
  })
  await ctx.start()
  // Every enabled entry started (the watcher among them), both tools there.
  await until(() => ctx.get('loader')?.file && [...ctx.loader.entries()].every((entry) => entry.disabled || entry.fork)
    && TOOLS.every((name) => ctx.get('tools')?.list().some((tool: { name: string }) => tool.name === name)), 'the app to start')
  const changes: string[] = []
  const entryEvents: string[] = []
  ctx.on('tools/changed', (name, change) => void changes.push(`${change} ${name}`))
  ctx.on('loader/entry-fork', (entry, type) => void entryEvents.push(`${type} ${entry.options.id}`))
  const transient = (result: CheckResult) => result.status === 'rejected' && result.code === 'CONFIG_UNREADABLE' && result.reason.includes('empty')
  return {
    ctx, dir, file, changes, checks, entryEvents,
    nextCheck(timeout = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          while (checks.length > seen && transient(checks[seen]!)) seen++
          if (checks.length <= seen) return
          clearTimeout(timer)
          waiters.delete(check)
          resolve(checks[seen++]!)
        }
        const timer = setTimeout(() => {
          waiters.delete(check)
          reject(new Error(`no config-watch/checked within ${timeout} ms; results so far: ${JSON.stringify(checks)}`))
        }, timeout)
        waiters.add(check)
        check()
      })
    },
    description: (tool) => ctx.tools.list().find((spec) => spec.name === tool)?.description,
    async stop() {
      await stopLoaderApp(ctx)
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** Saves like an editor's safe write: a new file renamed over the name (a new inode). */
export function renameSave(file: string, text: string) {
  const temp = `${file}.${process.pid}.swp`
  writeFileSync(temp, text)
  renameSync(temp, file)
}

/** Bounded polling (the shared test-support wait), under the name these specs use. */
export { until }
