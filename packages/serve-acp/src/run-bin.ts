import { existsSync, statSync } from 'node:fs'
import { resolve } from 'node:path'
import type { Context } from 'cordis'
import { exitHolds } from './stdio.js'

const USAGE = 'usage: cordis-subagents-acp <config.yml>\n  Starts the cordis app of config.yml (which must load @cordis-subagents/serve-acp) and serves it over ACP on stdin/stdout.\n'
/** Longest wait for the config's entries to apply, then for the server to listen. */
const STARTUP_MS = 30_000
/** Longest wait for the app to stop before the process exits anyway. */
const STOP_MS = 15_000

/** Exit codes: 0 stopped cleanly, 1 the app did not serve, 2 usage. */
export async function runBin(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stderr.write(USAGE)
    return 0
  }
  const files = argv.filter((arg) => !arg.startsWith('-'))
  const unknown = argv.filter((arg) => arg.startsWith('-'))
  if (unknown.length || files.length !== 1) {
    process.stderr.write(`cordis-subagents-acp: ${unknown.length ? `unknown option ${unknown[0]}` : 'give exactly one config file'}\n${USAGE}`)
    return 2
  }
  const filename = resolve(files[0])
  if (!existsSync(filename) || !statSync(filename).isFile()) {
    process.stderr.write(`cordis-subagents-acp: config file ${filename} does not exist\n`)
    return 2
  }

  const [{ Context }, { default: Loader }] = await Promise.all([import('cordis'), import('@cordisjs/loader')])
  const ctx: Context = new Context()
  const errors: string[] = []
  let applied = false
  let failed: Error | undefined
  let wake = () => {}
  const ready = new Promise<void>((resolve) => { wake = resolve })
  const closed = new Promise<string>((resolve) => {
    ctx.on('serve-acp/closed', () => resolve('the ACP client closed stdin'))
    // `on`, not `once`: this handler stays while the app stops, so other handlers (provider-acp's
    // safety net) see that someone owns the signal and leave the shutdown to it.
    process.on('SIGTERM', () => resolve('SIGTERM'))
    process.on('SIGINT', () => resolve('SIGINT'))
  })
  ctx.on('internal/error', (error: unknown) => { errors.push(error instanceof Error ? error.message : String(error)) })
  ctx.on('serve-acp/applied', () => { applied = true })
  ctx.on('serve-acp/failed', (error) => { failed = error; wake() })
  ctx.on('serve-acp/ready', () => wake())

  ctx.plugin(Loader, { filename } as never)
  try {
    await ctx.start()
  } catch (error) {
    process.stderr.write(`cordis-subagents-acp: cannot load ${filename}: ${error instanceof Error ? error.message : String(error)}\n`)
    return 1
  }
  // The loader must never write the operator's file back (it would on some entry changes).
  const file = (ctx.loader as unknown as { file?: { write(): void } }).file
  if (file) file.write = () => {}
  await settle(ctx, () => errors.length)
  const served = applied && await Promise.race([ready.then(() => !failed), delay(STARTUP_MS).then(() => false)])
  if (!served) {
    const why = failed ? `the ACP SDK failed to load: ${failed.message}`
      : applied ? `the server did not start within ${STARTUP_MS} ms`
        : 'no @cordis-subagents/serve-acp entry was applied'
    const detail = errors.length ? `\nerrors while loading:\n${errors.map((line) => `  - ${line}`).join('\n')}` : ''
    process.stderr.write(`cordis-subagents-acp: ${filename} does not serve ACP: ${why}.${detail}\nCheck the entry \`name: '@cordis-subagents/serve-acp'\` and its config (see its README).\n`)
    await stop(ctx)
    return 1
  }
  const reason = await closed
  process.stderr.write(`cordis-subagents-acp: stopping (${reason})\n`)
  await stop(ctx)
  return 0
}

/** Waits until every enabled loader entry has applied (or failed, once errors stop coming), bounded by STARTUP_MS. */
async function settle(ctx: Context, errorCount: () => number): Promise<void> {
  const deadline = Date.now() + STARTUP_MS
  let quiet = 0
  while (Date.now() < deadline) {
    await ctx.lifecycle.flush()
    const loader = ctx.loader as unknown as { entries(): Iterable<{ disabled?: boolean; fork?: unknown }> } | undefined
    const pending = loader ? [...loader.entries()].filter((entry) => !entry.disabled && !entry.fork).length : 0
    if (!pending) return
    // An entry that failed to import never gets a fork: once errors were logged and nothing moves for a while, stop waiting.
    quiet = errorCount() ? quiet + 1 : 0
    if (quiet > 20) return
    await delay(10)
  }
}

/** Disables the loader's entries (last first), then stops the context; bounded by STOP_MS. */
async function stop(ctx: Context): Promise<void> {
  const stopping = (async () => {
    type Entry = { options: { disabled?: boolean }; refresh(): Promise<void> }
    const loader = ctx.loader as unknown as { entries(): Iterable<Entry> } | undefined
    for (const entry of loader ? [...loader.entries()].reverse() : []) {
      try {
        entry.options.disabled = true
        await entry.refresh()
      } catch {}
    }
    await ctx.lifecycle.flush().catch(() => {})
    // The loader's `inject` sub-plugin reads `ctx.loader` in a global service hook, which throws once
    // the loader is gone: dispose it before the context.
    for (const runtime of [...ctx.registry.values()]) {
      const plugin = runtime.plugin as { name?: string; apply?: unknown } | undefined
      if (plugin?.name === 'inject' && String(plugin.apply).includes('loader/entry-check')) runtime.dispose()
    }
    await ctx.stop().catch(() => {})
    // Plugins' async cleanup (agents disposed, exporters flushed) that ctx.stop() does not await.
    await exitHolds()
  })()
  await Promise.race([stopping, delay(STOP_MS)])
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref())
}
