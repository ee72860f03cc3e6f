#!/usr/bin/env node
/**
 * The quick start CLI: `npm start -- [--json] [--interactive] [--view] [--config file] [--verbose] [task]`.
 * Boots the app from cordis.yml through @cordisjs/loader, runs the task on a root agent while it
 * prints a live delegation tree, then the answer and a usage line.
 */
import { clearLine, createInterface, cursorTo } from 'node:readline'
import { Logger } from 'cordis'
import type { RunResult } from '@cordis-subagents/agent'
import { configFileProblem, type PendingQuestion } from '@cordis-subagents/shared'
import * as configWatch from '@cordis-subagents/config-watch'
import { startApp } from './app.js'
import { EXIT_USAGE, parseArgs } from './options.js'
import { Tree, usageLine } from './live-tree.js'
import { questionLines } from './questions.js'
import { jsonLine, terminalLine, terminalLog, terminalText } from './terminal-text.js'
import { startGlobalTracing } from './tracing.js'
import { openView, VIEW_STAYS } from './view.js'
export { DEFAULT_TASK } from './options.js'

/** Lines typed or piped while a turn runs wait in a queue of at most this many. */
const MAX_QUEUED_LINES = 100
/** Exit code when the terminal hung up (128 + SIGHUP, as a shell reports it). */
const EXIT_HANGUP = 129
/** An error a closed terminal gives (EIO) or a reader that went away (EPIPE): the output or the input is gone. */
const gone = (error: unknown) => ['EIO', 'EPIPE', 'ERR_STREAM_DESTROYED'].includes((error as NodeJS.ErrnoException)?.code ?? '')

async function main() {
  const options = parseArgs(process.argv.slice(2))
  const problem = configFileProblem(options.config, 'give the path of a cordis.yml (see --help; the default is the quick start\'s own)')
  if (problem) return fail(`config file ${options.config} ${problem}`, EXIT_USAGE)
  // stdout's reader went away (`| head`) or the terminal closed: stop writing and shut down as Ctrl-D would.
  let stdoutGone = false
  /** The terminal hung up (SIGHUP, EIO, its input ended): set before the exit, whichever came first. */
  let hungUp = false
  const terminalAtStart = Boolean(process.stdin.isTTY || process.stdout.isTTY || process.stderr.isTTY)
  let whenGone: (code: number) => void = (code) => process.exit(code)
  process.stdout.on('error', (error) => {
    if (stdoutGone) return
    stdoutGone = true
    hungUp = (error as NodeJS.ErrnoException).code === 'EIO'
    whenGone(hungUp ? EXIT_HANGUP : 0)
  })
  // cordis logs go to stderr (stdout carries the tree, the answer or the JSON object).
  // Log lines can quote a server or a model (a diagnostic): only colour sequences are kept.
  // Until the app is up they are held (unless --verbose): a config the loader cannot read is then one line, not stacks.
  let held: string[] | undefined = options.verbose ? undefined : []
  const print = (text: string) => void process.stderr.write(terminalLog(text) + '\n')
  for (const target of Logger.targets) target.print = (text: string) => held ? void held.push(text) : print(text)
  Logger.levels.base = options.verbose ? 3 : 1
  /** Prints text that may come from a model or an agent: escape sequences and controls removed. */
  let out = (text: string) => void (stdoutGone || process.stdout.write(terminalText(text) + '\n'))

  // OTEL_EXPORTER_OTLP_ENDPOINT set: the telemetry entry of cordis.yml exports through it.
  const tracing = await startGlobalTracing('cordis-subagents-quickstart')
  const app = await startApp(options.config).catch((error: unknown) => {
    for (const text of held ?? []) print(text)
    throw error
  })
  const { ctx, loader } = app
  const startLog = held ?? []
  held = undefined
  if (!loader) {
    // The loader could not read the file (YAML error, not a list of entries): its first error, in one line.
    const first = startLog.map((text) => text.replace(/\u001b\[[0-9;]*m/g, '')).find((text) => /^\[E\]/.test(text))
    const why = first?.split('\n')[0].replace(/^\[E\]\s+\S+\s+/, '') ?? 'the loader did not start'
    await app.stop()
    await tracing?.shutdown()
    return fail(`config file ${options.config} cannot be loaded: ${terminalLine(why)}`, EXIT_USAGE)
  }
  for (const text of startLog) print(text)
  // The CLI never rewrites the user's cordis.yml (the loader would write its simplified form back).
  if (loader.file) loader.file.write = () => {}
  const agent = ctx.agents.create({ label: 'main' })
  const tree = new Tree(app, options.json ? undefined : (line) => out(line))
  if (options.view) process.stderr.write(`view: ${await openView(ctx)}\n`)

  let current: AbortController | undefined
  let shuttingDown: Promise<void> | undefined
  let watcher: { dispose(): unknown } | undefined
  let stopReloadLog: (() => void) | undefined
  let closeInput: (() => void) | undefined
  const shutdown = (code: number) => (shuttingDown ??= (async () => {
    // Shutting down unregisters every tool: that is not a reload worth reporting.
    stopReloadLog?.()
    current?.abort(new Error('interrupted (Ctrl-C)'))
    watcher?.dispose()
    closeInput?.()
    tree.stopHeartbeat()
    await agent.dispose()
    await app.stop()
    await reapAcp()
    await tracing?.shutdown()
    // A hung-up terminal: Node's exit would reset its modes, fail (EIO) and abort; end by the hang-up signal instead.
    if (hungUp && terminalAtStart) {
      process.removeAllListeners('SIGHUP')
      process.kill(process.pid, 'SIGHUP')
    }
    process.exit(code)
  })())
  whenGone = (code) => { void shutdown(code) }
  if (stdoutGone) void shutdown(0)
  process.on('SIGINT', () => {
    // A second Ctrl-C forces: exit now (provider-acp's exit handler SIGKILLs the agents' groups).
    if (shuttingDown) return process.exit(130)
    // The input closes first (the terminal leaves raw mode), so a press after the line below is a real SIGINT and
    // forces; said the other way round, a quick second press could land in the closing input and do nothing.
    closeInput?.()
    if (!options.json) out('\n^C: cancelling in-flight delegations and shutting down… (Ctrl-C again to force)')
    void shutdown(0)
  })
  process.on('SIGTERM', () => void shutdown(0))
  // The terminal closed: its input is gone and touching the tty fails (EIO), so the input closes without
  // leaving raw mode and the app shuts down as on Ctrl-D (children stopped), with the exit code of a hang-up.
  const hangUp = () => {
    hungUp = true
    stdoutGone = true
    void shutdown(EXIT_HANGUP)
  }
  process.on('SIGHUP', hangUp)

  /** The question the last turn parked on: the next line answers it (`agent.resume`). */
  let awaiting: PendingQuestion | undefined
  type Before = { own: typeof agent.usage.own; delegated: typeof agent.usage.delegated }
  const usageNow = (): Before => ({ own: { ...agent.usage.own }, delegated: { ...agent.usage.delegated } })
  const runTurn = async (task: string, answering?: PendingQuestion) => {
    if (!options.json && !answering) {
      out(`task: ${terminalLine(task)}`)
      out(`tools: ${ctx.tools.list().map((tool) => terminalLine(tool.name)).join(', ')}`)
    }
    const before = usageNow()
    const started = Date.now()
    current = new AbortController()
    tree.startTurn()
    const runOptions = { signal: current.signal, onEvent: tree.onRootEvent }
    // Taken before the turn goes on: a result that comes back here is not reported as answered elsewhere.
    awaiting = undefined
    const result: RunResult = answering ? await agent.resume(task, runOptions) : await agent.run(task, runOptions)
    tree.stopHeartbeat()
    current = undefined
    return report(task, answering, result, Date.now() - started, before)
  }

  /**
   * The root parked on `question`: an answer given elsewhere (the live page's answer box, the host
   * by run id) continues it without the terminal. Its result is reported as a terminal answer's is.
   */
  const watchAnswers = (question: PendingQuestion) => {
    const started = Date.now()
    const before = usageNow()
    agent.nextResult().then((result) => {
      if (awaiting?.id !== question.id || shuttingDown) return
      if (!options.json) out('\n(the question was answered elsewhere, on the live page; the turn went on)')
      report(question.text, question, result, Date.now() - started, before, true)
      if (!options.interactive && options.view && !awaiting) process.stderr.write(`${VIEW_STAYS}\n`)
    }, () => {})
  }

  const report = (
    task: string, answering: PendingQuestion | undefined, result: RunResult, ms: number, before: Before, elsewhere = false,
  ) => {
    awaiting = result.stopReason === 'pending' ? result.question : undefined
    // Interrupted: the turn was cancelled by Ctrl-C; the app is going down, nothing more to report.
    if (shuttingDown) return result
    if (awaiting) watchAnswers(awaiting)
    if (options.json) {
      // One line of JSON; values exact, with every control character escaped.
      if (!stdoutGone) process.stdout.write(jsonLine({
        task,
        ...answering ? { answering: answering.id } : {},
        ...elsewhere ? { answeredElsewhere: true } : {},
        answer: result.text,
        stopReason: result.stopReason,
        ...(result.diagnostic ? { diagnostic: result.diagnostic } : {}),
        steps: result.steps,
        toolCalls: result.toolCalls,
        durationMs: ms,
        usage: { own: agent.usage.own, delegated: agent.usage.delegated, total: agent.usage.total, before },
        delegations: tree.delegations(),
        ...result.question ? { question: result.question } : {},
      }) + '\n')
    } else if (awaiting) {
      out('')
      for (const line of questionLines(awaiting, options.interactive)) out(line)
    } else {
      out('')
      out(`answer${result.stopReason === 'completed' ? '' : ` (${result.stopReason}${result.diagnostic ? `: ${terminalLine(result.diagnostic)}` : ''})`}:`)
      out(result.text || '(no text)')
      out('')
      out(usageLine(agent, result, ms, tree.nodes.size))
    }
    return result
  }

  if (!options.interactive) {
    const result = await runTurn(options.task)
    if (options.view) return void process.stderr.write(`${VIEW_STAYS}\n`)
    await shutdown(result.stopReason === 'completed' ? 0 : 1)
    return
  }

  // Interactive: a multi-turn conversation, hot reload of cordis.yml.
  // Input keeps flowing during a turn (lines typed meanwhile are queued): with readline paused, a
  // terminal in raw mode would hold Ctrl-C until the turn ends.
  const rl = createInterface({ input: process.stdin, output: process.stdout, prompt: '> ' })
  closeInput = () => {
    // A hung-up terminal cannot leave raw mode (EIO): readline must not try.
    if (stdoutGone) (rl as { terminal: boolean }).terminal = false
    rl.close()
  }
  const onInputError = (error: unknown) => {
    if (gone(error)) return hangUp()
    process.stderr.write(`quickstart: input: ${error instanceof Error ? error.message : String(error)}\n`)
    void shutdown(1)
  }
  rl.on('error', onInputError)
  process.stdin.on('error', onInputError)
  // A terminal's input never ends on Ctrl-D (readline reads it as a key): an end there is the terminal closing.
  if (process.stdin.isTTY) process.stdin.on('end', hangUp)
  const terminal = process.stdout.isTTY
  let busy = false
  let promptPending = false
  const ask = () => {
    promptPending = false
    if (!busy && !shuttingDown && !stdoutGone) rl.prompt(true)
  }
  // Lines printed while idle (reload messages) go above the prompt, which is then redrawn.
  const plain = out
  out = (text) => {
    if (busy || shuttingDown) return plain(text)
    if (terminal && !stdoutGone) {
      cursorTo(process.stdout, 0)
      clearLine(process.stdout, 0)
    }
    plain(text)
    if (!promptPending) {
      promptPending = true
      setImmediate(ask)
    }
  }

  stopReloadLog = ctx.on('tools/changed', (name, change) => {
    const spec = ctx.tools.list().find((tool) => tool.name === name)
    out(`[reload] tool ${terminalLine(name)} ${change === 'added' ? 'registered' : 'unregistered'}${spec ? `: ${terminalLine(spec.description)}` : ''}`)
  })
  // Hot reload by @cordis-subagents/config-watch: it checks a save before the loader sees it.
  ctx.on('config-watch/reloading', () => out(`[reload] ${options.config} changed; refreshing`))
  ctx.on('config-watch/checked', (result) => {
    if (result.status === 'rejected' && result.code !== 'CONFIG_UNREADABLE') {
      out(`[reload] rejected (${result.code}), previous configuration kept: ${terminalLine(result.reason)}${result.line ? ` (line ${result.line})` : ''}`)
    } else if (result.status === 'unchanged') {
      out('[reload] saved without a change; nothing to reload')
    } else if (result.status === 'applied' && result.errors.length) {
      out(`[reload] applied with an error (that entry is not running; fix the file to reload it): ${terminalLine(result.errors[0]!)}`)
    }
  })
  watcher = ctx.plugin(configWatch)

  const queue: string[] = []
  let first = true
  let inputClosed = false
  const drain = async () => {
    if (busy) return
    busy = true
    while (queue.length && !shuttingDown) {
      const line = queue.shift()!
      if (awaiting && agent.parked?.id !== awaiting.id) {
        plain('(that question was answered already, on the live page; its turn goes on and its result shows here)')
        continue
      }
      // A turn an answer from the page continued is still running: the next task waits for it.
      if (agent.running) await agent.nextResult().catch(() => {})
      if (awaiting) {
        // The person's line answers the question the root run is parked on.
        if (!line.trim()) {
          plain('(an answer cannot be empty; type your answer)')
          continue
        }
        await runTurn(line, awaiting)
        continue
      }
      const task = line.trim() || (first ? options.task : 'Which package has the most internal dependencies?')
      first = false
      await runTurn(task)
    }
    busy = false
    if (inputClosed) void shutdown(0)
    else ask()
  }
  rl.on('line', (line) => {
    if (queue.length >= MAX_QUEUED_LINES) return plain(`(ignored: ${MAX_QUEUED_LINES} tasks are already waiting)`)
    queue.push(line)
    void drain()
  })
  // With the signal's name, as a real SIGINT passes it (listeners such as provider-acp's read it).
  rl.on('SIGINT', () => process.emit('SIGINT', 'SIGINT'))
  rl.on('close', () => {
    inputClosed = true
    // End of piped input: finish the queued turns first. Ctrl-D at a terminal: quit now.
    if (!busy || process.stdin.isTTY) void shutdown(0)
  })
  out(`interactive: type a task (empty line = the demo question); edit ${options.config} to hot-reload; Ctrl-C or Ctrl-D to quit.`)
}

/** Waits (bounded) until provider-acp has no live agent process group left. */
async function reapAcp() {
  try {
    const { liveProcessGroups } = await import('@cordis-subagents/provider-acp')
    for (let i = 0; i < 100 && liveProcessGroups().length; i++) await new Promise((resolve) => setTimeout(resolve, 50))
  } catch {}
}

/** One line on stderr, then the exit code. */
function fail(message: string, code: number): never {
  process.stderr.write(`quickstart: ${message}\n`)
  process.exit(code)
}

main().catch((error) => fail(error instanceof Error ? error.message : String(error), 1))

