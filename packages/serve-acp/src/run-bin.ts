import { closeSync, openSync, statSync } from 'node:fs'
import { resolve } from 'node:path'
import { delay, type HostApp } from './host-app.js'
import { exitHolds, serverSignals } from './stdio.js'

const USAGE = `usage: cordis-subagents-acp [--koishi] <config file>
  Starts the app of the config file (a cordis.yml for @cordisjs/loader, or with --koishi a
  koishi.yml for Koishi's loader) and serves it over ACP on stdin/stdout. The config must load
  @cordis-subagents/serve-acp. Logs go to stderr.

exit codes: 0 stopped (stdin closed, SIGTERM, SIGINT); 1 the app did not serve ACP (the reason is on
  stderr); 2 usage error, or the config file is missing, not a file or unreadable.
`
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
  const koishi = argv.includes('--koishi')
  const files = argv.filter((arg) => !arg.startsWith('-'))
  const unknown = argv.filter((arg) => arg.startsWith('-') && arg !== '--koishi')
  if (unknown.length || files.length !== 1) {
    process.stderr.write(`cordis-subagents-acp: ${unknown.length ? `unknown option ${unknown[0]}` : 'give exactly one config file'}\n${USAGE}`)
    return 2
  }
  const filename = resolve(files[0])
  const problem = configProblem(filename)
  if (problem) {
    process.stderr.write(`cordis-subagents-acp: config file ${filename} ${problem}\n`)
    return 2
  }

  const signals = serverSignals()
  const errors: string[] = []
  let applied = false
  let failed: Error | undefined
  let wake = () => {}
  const ready = new Promise<void>((resolve) => { wake = resolve })
  const closed = new Promise<string>((resolve) => {
    signals.on('closed', () => resolve('the ACP client closed stdin'))
    // `on`, not `once`: this handler stays while the app stops, so other handlers (provider-acp's
    // safety net) see that someone owns the signal and leave the shutdown to it.
    process.on('SIGTERM', () => resolve('SIGTERM'))
    process.on('SIGINT', () => resolve('SIGINT'))
  })
  signals.on('applied', () => { applied = true })
  signals.on('failed', (error: Error) => { failed = error; wake() })
  signals.on('ready', () => wake())

  let app: HostApp
  try {
    app = koishi ? await (await import('./koishi-app.js')).koishiApp(filename) : await (await import('./cordis-app.js')).cordisApp(filename)
    app.on('internal/error', (error: unknown) => { errors.push(error instanceof Error ? error.message : String(error)) })
    await app.start(() => errors.length, STARTUP_MS)
  } catch (error) {
    process.stderr.write(`cordis-subagents-acp: cannot load ${filename}: ${error instanceof Error ? error.message : String(error)}\n`)
    return 1
  }
  const served = applied && await Promise.race([ready.then(() => !failed), delay(STARTUP_MS).then(() => false)])
  if (!served) {
    const why = failed
      ? `the ACP SDK failed to load: ${failed.message}`
      : applied ? `the server did not start within ${STARTUP_MS} ms` : 'no @cordis-subagents/serve-acp entry was applied'
    const detail = errors.length ? `\nerrors while loading:\n${errors.map((line) => `  - ${line}`).join('\n')}` : ''
    process.stderr.write(`cordis-subagents-acp: ${filename} does not serve ACP: ${why}.${detail}\nCheck the entry of @cordis-subagents/serve-acp and its config (see its README).\n`)
    await stop(app)
    return 1
  }
  const reason = await closed
  process.stderr.write(`cordis-subagents-acp: stopping (${reason})\n`)
  await stop(app)
  return 0
}

/** Why `filename` cannot be the config (one clause), or undefined when it can be read. */
function configProblem(filename: string): string | undefined {
  const what = 'give the path of the config file that loads @cordis-subagents/serve-acp (see --help)'
  try {
    if (!statSync(filename).isFile()) return `is not a file: ${what}`
    closeSync(openSync(filename, 'r'))
    return undefined
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return `does not exist: ${what}`
    return `cannot be read (${code ?? String(error)}): check its permissions and those of its folders for the user the client runs this as`
  }
}

/** Stops the app, then waits for the async cleanup plugins registered (holdExit); bounded by STOP_MS. */
async function stop(app: HostApp): Promise<void> {
  await Promise.race([(async () => {
    await app.stop()
    // Plugins' async cleanup (agents disposed, exporters flushed) that ctx.stop() does not await.
    await exitHolds()
  })(), delay(STOP_MS)])
}
