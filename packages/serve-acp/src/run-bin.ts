import { resolve } from 'node:path'
import { configFileProblem } from '@cordis-subagents/shared'
import { delay, type HostApp } from './host-app.js'
import { exitHolds, serverSignals } from './stdio.js'

const USAGE = `usage: cordis-subagents-acp [--koishi] <config file>
  Starts the app of the config file (a cordis.yml for @cordisjs/loader, or with --koishi a
  koishi.yml for Koishi's loader) and serves it over ACP on stdin/stdout. The config must load
  @cordis-subagents/serve-acp. Logs go to stderr.

exit codes: 0 stopped (stdin or stdout closed by the client, SIGTERM, SIGINT, SIGHUP); 1 the app did not
  serve ACP, or writing to stdout failed otherwise (the reason is on stderr); 2 usage error, or the config
  file is missing, not a file or unreadable.
`
/** Longest wait for the config's entries to apply, then for the server to listen. */
const STARTUP_MS = 30_000
/** Longest wait for the app to stop before the process exits anyway. */
const STOP_MS = 15_000

/** Why the bin stops, and its exit code. */
interface Stop {
  reason: string
  code: number
}
/** Write errors on stdout that mean the client closed its end. */
const CLIENT_GONE = ['EPIPE', 'ECONNRESET']

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
  const problem = configFileProblem(filename, 'give the path of the config file that loads @cordis-subagents/serve-acp (see --help)',
    'check its permissions and those of its folders for the user the client runs this as')
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
  const closed = new Promise<Stop>((resolve) => {
    signals.on('closed', () => resolve({ reason: 'the ACP client closed stdin', code: 0 }))
    // The client closed its end of stdout (or the pipe broke): it is gone, as when it closes stdin. Any other write
    // error leaves no way to answer either: the app stops the same way, exit 1.
    process.stdout.on('error', (error: NodeJS.ErrnoException) => resolve(CLIENT_GONE.includes(error.code ?? '')
      ? { reason: 'the ACP client closed stdout', code: 0 }
      : { reason: `writing to stdout failed: ${error.code ?? error.message}`, code: 1 }))
    // `on`, not `once`: this handler stays while the app stops, so other handlers (provider-acp's
    // safety net) see that someone owns the signal and leave the shutdown to it. SIGHUP (the terminal
    // or the session went away) too: dying by it would skip the stop and leave the app's children running.
    for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => resolve({ reason: signal, code: 0 }))
  })
  signals.on('applied', () => { applied = true })
  signals.on('failed', (error: Error) => { failed = error; wake() })
  signals.on('ready', () => wake())

  let app: HostApp
  // A stop (a signal, the client gone) while the app starts: stop it now, not after the startup bound.
  let stopped: Stop | undefined
  const stopping = closed.then((stop) => { stopped = stop })
  try {
    app = koishi ? await (await import('./koishi-app.js')).koishiApp(filename) : await (await import('./cordis-app.js')).cordisApp(filename)
    app.on('internal/error', (error: unknown) => { errors.push(error instanceof Error ? error.message : String(error)) })
    await Promise.race([app.start(() => errors.length, STARTUP_MS), stopping])
  } catch (error) {
    process.stderr.write(`cordis-subagents-acp: cannot load ${filename}: ${error instanceof Error ? error.message : String(error)}\n`)
    return 1
  }
  const served = !stopped && applied
    && await Promise.race([ready.then(() => !failed), stopping.then(() => false), delay(STARTUP_MS).then(() => false)])
  if (stopped) {
    process.stderr.write(`cordis-subagents-acp: stopping while starting (${stopped.reason})\n`)
    await stop(app)
    return stopped.code
  }
  if (!served) {
    const why = failed
      ? `the ACP SDK failed to load: ${failed.message}`
      : applied ? `the server did not start within ${STARTUP_MS} ms` : 'no @cordis-subagents/serve-acp entry was applied'
    const detail = errors.length ? `\nerrors while loading:\n${errors.map((line) => `  - ${line}`).join('\n')}` : ''
    process.stderr.write(`cordis-subagents-acp: ${filename} does not serve ACP: ${why}.${detail}\nCheck the entry of @cordis-subagents/serve-acp and its config (see its README).\n`)
    await stop(app)
    return 1
  }
  const { reason, code } = await closed
  process.stderr.write(`cordis-subagents-acp: stopping (${reason})\n`)
  await stop(app)
  return code
}


/** Stops the app, then waits for the async cleanup plugins registered (holdExit); bounded by STOP_MS. */
async function stop(app: HostApp): Promise<void> {
  await Promise.race([(async () => {
    await app.stop()
    // Plugins' async cleanup (agents disposed, exporters flushed) that ctx.stop() does not await.
    await exitHolds()
  })(), delay(STOP_MS)])
}
