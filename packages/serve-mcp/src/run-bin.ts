import type { Context } from 'cordis'
import { headChars } from '@cordis-subagents/shared'
import { BIN_NAME, EXIT, parseArgs } from './bin-args.js'
import { exitHolds, stdioOutput, stdioSignals } from './stdio.js'

/** Longest wait for the config's entries to apply, then for the stdio server to connect (ms, on the monotonic clock). */
const STARTUP_MS = 30_000
/** Longest wait for the app to stop before the process exits anyway (ms). */
const STOP_MS = 10_000

type Outcome = { served: true } | { served: false; why: string }

/** Runs the bin; resolves with the exit code once the app has stopped (or did not serve). */
export async function runBin(argv: string[]): Promise<number> {
  const args = parseArgs(argv)
  if ('exit' in args) return args.exit
  let ctx: Context
  try {
    ctx = await createApp(args.filename)
  } catch (error) {
    process.stderr.write(`${BIN_NAME}: cannot load cordis and @cordisjs/loader (${message(error)}): install @cordis-subagents/serve-mcp and cordis in the project\n`)
    return EXIT.notServed
  }
  const closed = new Promise<number>((resolve) => {
    process.stdin.once('end', () => resolve(EXIT.stopped))
    process.stdin.once('close', () => resolve(EXIT.stopped))
    // `on`, not `once`: the handler stays while the app stops, so other handlers (the safety nets that
    // kill child process groups) see that someone owns the signal and leave the shutdown to it.
    process.on('SIGINT', () => resolve(EXIT.sigint))
    process.on('SIGTERM', () => resolve(EXIT.sigterm))
    process.on('SIGHUP', () => resolve(EXIT.sighup))
    // MCP's output failing is the client going away as surely as stdin closing: the same graceful stop.
    for (const output of new Set([process.stdout, stdioOutput()])) output.on('error', (error) => resolve(outputFailed(error)))
  })
  const outcome = await Promise.race([serve(ctx), closed.then((code) => ({ served: false, code } as const))])
  if ('code' in outcome) {
    await stop(ctx)
    return outcome.code
  }
  if (!outcome.served) {
    process.stderr.write(`${BIN_NAME}: ${args.filename} does not serve MCP: ${outcome.why}\n`)
    await stop(ctx)
    return EXIT.notServed
  }
  const code = await closed
  await stop(ctx)
  return code
}

async function createApp(filename: string): Promise<Context> {
  const [{ Context, Logger }, { default: Loader }] = await Promise.all([import('cordis'), import('@cordisjs/loader')])
  for (const target of Logger.targets) target.print = (text: string) => process.stderr.write(`${text}\n`)
  Logger.levels.base = verboseLogs(process.env.CORDIS_SUBAGENTS_MCP_VERBOSE) ? 3 : 2
  const ctx = new Context()
  // The loader writes its file back on some entry changes (a failed entry is marked disabled): never the operator's file.
  ctx.on('loader/config-update', () => {
    const files = (ctx.loader as unknown as { files?: Record<string, { write(): void }> } | undefined)?.files ?? {}
    for (const file of Object.values(files)) file.write = () => {}
  })
  ctx.plugin(Loader, { filename } as never)
  return ctx
}

/** Exit code when MCP's stdout fails: a reader gone (EPIPE, ECONNRESET) is a client that left, anything else is said once. */
function outputFailed(error: NodeJS.ErrnoException): number {
  if (error.code === 'EPIPE' || error.code === 'ECONNRESET') return EXIT.stopped
  process.stderr.write(`${BIN_NAME}: writing MCP messages to stdout failed (${error.code ?? message(error)}): stopping\n`)
  return EXIT.notServed
}

const VERBOSE_ON = ['1', 'true', 'yes', 'on']
const VERBOSE_OFF = ['', '0', 'false', 'no', 'off']

/** Whether CORDIS_SUBAGENTS_MCP_VERBOSE asks for debug logs; a value that is neither on nor off is said once and means off. */
export function verboseLogs(value: string | undefined): boolean {
  const word = (value ?? '').trim().toLowerCase()
  if (VERBOSE_ON.includes(word)) return true
  if (!VERBOSE_OFF.includes(word)) {
    process.stderr.write(`${BIN_NAME}: ignoring CORDIS_SUBAGENTS_MCP_VERBOSE=${JSON.stringify(value).slice(1, -1).slice(0, 40)}: `
      + `set it to 1 (or true, yes, on) for debug logs, or 0 (false, no, off, empty) for none\n`)
  }
  return false
}

/** Starts the app and waits (bounded) until the stdio server connected, failed, or will not start. */
async function serve(ctx: Context): Promise<Outcome> {
  const signals = stdioSignals()
  const errors: string[] = []
  let applied = false
  let failed: string | undefined
  let ready = false
  let wake = () => {}
  const settled = new Promise<void>((resolve) => { wake = resolve })
  signals.on('applied', () => { applied = true })
  signals.on('failed', (error: unknown, step: string) => { failed = `${step}: ${oneLine(message(error))}`; wake() })
  signals.on('ready', () => { ready = true; wake() })
  ctx.on('internal/error', (error: unknown) => { errors.push(message(error)) })
  const deadline = performance.now() + STARTUP_MS
  try {
    await ctx.start()
    await entriesSettled(ctx, () => errors.length, deadline)
  } catch (error) {
    errors.push(message(error))
  }
  if (applied && !ready && failed === undefined) await within(settled, deadline - performance.now())
  if (ready) return { served: true }
  if (failed !== undefined) return { served: false, why: `${failed}.` }
  const first = errors.length ? ` First error: ${oneLine(errors[0]).replace(/\.$/, '')}${errors.length > 1 ? ` (${errors.length - 1} more above)` : ''}.` : ''
  if (applied) return { served: false, why: `the stdio server did not start within ${STARTUP_MS} ms.${first}` }
  return {
    served: false,
    why: `no @cordis-subagents/serve-mcp entry with transport: stdio was applied.${first} Check that entry, its config and the plugins it needs (tools, agent)`,
  }
}

/** Waits until every enabled loader entry has applied, or errors stopped coming while some never will (`deadline`: performance.now()). */
async function entriesSettled(ctx: Context, errorCount: () => number, deadline: number): Promise<void> {
  let quiet = 0
  while (performance.now() < deadline) {
    await ctx.lifecycle.flush()
    const loader = ctx.loader as unknown as { entries(): Iterable<{ disabled?: boolean; fork?: unknown }> } | undefined
    if (![...loader?.entries() ?? []].some((entry) => !entry.disabled && !entry.fork)) return
    // An entry whose plugin failed to import never gets a fork: stop once errors came and nothing moved for a while.
    quiet = errorCount() ? quiet + 1 : 0
    if (quiet > 20) return
    // Not unref'd: while entries load it may be all that holds the event loop.
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** Stops the app: the loader's entries last first (serving stops before what it serves), the context, then the store's own stop. */
async function stop(ctx: Context): Promise<void> {
  // Imported here, as cordis is: a usage error runs nothing of the workspace's.
  const stores = (await import('@cordis-subagents/shared')).unawaitedStops(ctx)
  await within((async () => {
    type Entry = { options: { disabled?: boolean }; refresh(): Promise<void> }
    const loader = ctx.loader as unknown as { entries(): Iterable<Entry> } | undefined
    for (const entry of [...loader?.entries() ?? []].reverse()) {
      entry.options.disabled = true
      await entry.refresh().catch(() => {})
      // The served sessions' close (holdExit: their calls ended, the agents disposed, the children torn down) before the
      // entries they delegate through stop, and before the process exits.
      await exitHolds()
    }
    await ctx.lifecycle.flush().catch(() => {})
    // The loader's `inject` sub-plugin reads ctx.loader in a global service hook, which throws (an uncaught
    // TypeError on stderr) once the loader is gone: it goes first.
    for (const runtime of [...ctx.registry.values()]) {
      const plugin = runtime.plugin as { name?: string; apply?: unknown } | undefined
      if (plugin?.name === 'inject' && String(plugin.apply).includes('loader/entry-check')) runtime.dispose()
    }
    await ctx.stop()
    await exitHolds()
    await stores()
  })().catch((error) => {
    process.stderr.write(`${BIN_NAME}: stopping failed: ${message(error)}\n`)
  }), STOP_MS)
}

/** Waits for `work`, at most `ms`. The timer holds the process: it may be all the event loop has left. */
async function within(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  await Promise.race([work, new Promise((resolve) => { timer = setTimeout(resolve, Math.max(0, ms)) })])
  clearTimeout(timer)
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

function oneLine(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim()
  return headChars(line, 300, '…')
}
