#!/usr/bin/env node
/**
 * The quick start CLI: `npm start -- [--json] [--interactive] [--view] [--config file] [--verbose] [task]`.
 * Boots the app from cordis.yml through @cordisjs/loader, runs the task on a root agent while it
 * prints a live delegation tree, then the answer and a usage line.
 */
import { clearLine, createInterface, cursorTo } from 'node:readline'
import { Logger } from 'cordis'
import type { Agent, AgentEvent, RunResult } from '@cordis-subagents/agent'
import type { SubagentOutcome, SubagentRunInfo, SubagentUpdate } from '@cordis-subagents/subagents-service'
import type { Usage } from '@cordis-subagents/tools'
import * as configWatch from '@cordis-subagents/config-watch'
import { type App, startApp } from './app.js'
import { parseArgs } from './options.js'
import { jsonLine, terminalLine, terminalLog, terminalText } from './terminal-text.js'
import { startGlobalTracing } from './tracing.js'
import { openView, VIEW_STAYS } from './view.js'
export { DEFAULT_TASK } from './options.js'

const tokens = (usage: Usage) => usage.inputTokens + usage.outputTokens
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`

interface Node {
  info: SubagentRunInfo
  tool: string
  steps: number
  toolCalls: string[]
  outcome?: SubagentOutcome
}

/** Follows `subagent/*` events and the root agent's own events; prints them as they happen. */
class Tree {
  readonly nodes = new Map<string, Node>()
  /** Tool name per delegation label, learned from the parent's tool calls. */
  private readonly toolByLabel = new Map<string, string>()
  private lastOutput = Date.now()
  /** Elapsed stamps count from the start of the current turn. */
  private started = Date.now()
  private heartbeat?: NodeJS.Timeout

  constructor(private readonly app: App, private readonly print: ((line: string) => void) | undefined) {
    const { ctx } = app
    ctx.on('subagent/start', (info) => {
      const tool = this.toolByLabel.get(info.label ?? '') ?? `provider ${info.provider}`
      this.nodes.set(info.runId, { info, tool, steps: 0, toolCalls: [] })
      this.line(info.depth, `┌ ${tool} → ${info.provider}: "${info.label ?? ''}" started${info.childId ? ` (${info.childId})` : ''}`)
    })
    ctx.on('subagent/update', (info, update: SubagentUpdate) => {
      const node = this.nodes.get(info.runId)
      if (!node) return
      if (update.kind === 'step') {
        node.steps = Math.max(node.steps, update.step ?? node.steps + 1)
      } else if (update.kind === 'tool-call') {
        node.toolCalls.push(update.tool ?? '?')
        const step = update.step || node.steps
        this.line(info.depth, `│ ${info.label ?? info.runId} · ${step ? `step ${step} · ` : ''}calls ${update.tool ?? 'a tool'}`)
      } else if (update.kind === 'tool-result' && update.isError) {
        this.line(info.depth, `│ ${info.label ?? info.runId} · ${update.tool ?? 'tool'} failed`)
      }
    })
    ctx.on('subagent/end', (info, outcome) => {
      const node = this.nodes.get(info.runId)
      if (node) node.outcome = outcome
      // Providers that report no steps (ACP agents) get no step count rather than "0 steps".
      const steps = node?.steps ? `, ${plural(node.steps, 'step')}` : ''
      const calls = node ? `${steps}, ${plural(node.toolCalls.length, 'tool call')}` : ''
      this.line(info.depth, `└ ${info.label ?? info.runId}: ${outcome.stopReason} in ${seconds(outcome.durationMs)}${calls}`)
    })
  }

  /** The root agent's own events. */
  onRootEvent = (event: AgentEvent) => {
    if (event.type === 'tool-call') {
      const input = event.call.input as { description?: unknown } | undefined
      if (event.call.name.startsWith('subagent') && typeof input?.description === 'string') {
        this.toolByLabel.set(input.description.trim(), event.call.name)
      } else {
        this.line(0, `· main · step ${event.step} · calls ${event.call.name} ${JSON.stringify(event.call.input)}`)
      }
    } else if (event.type === 'message' || event.type === 'waiting') {
      // Background delegations: a result read from the inbox, or a turn waiting for one.
      this.line(0, event.type === 'message' ? `· main · step ${event.step} · reads ${event.content.split('\n')[0]}` : `· main · waits for ${plural(event.holds, 'background subagent')}`)
    } else if (event.type === 'text' && event.text.trim() && this.print) {
      const first = event.text.trim().split('\n')[0]
      this.line(0, `· main · step ${event.step}: ${first.length > 100 ? first.slice(0, 100) + '…' : first}`)
    }
  }

  /** Every line: labels, tool names, ids and text come from models and agents, so each is one sanitised line. */
  private line(depth: number, text: string) {
    if (!this.print) return
    this.lastOutput = Date.now()
    this.print(`[${seconds(Date.now() - this.started).padStart(5)}] ${'  '.repeat(Math.max(depth, 0))}${terminalLine(text)}`)
  }

  startTurn() {
    this.started = Date.now()
    this.lastOutput = this.started
    this.startHeartbeat()
  }

  startHeartbeat() {
    if (!this.print) return
    this.heartbeat = setInterval(() => {
      if (Date.now() - this.lastOutput < 5000) return
      const live = [...this.nodes.values()].filter((node) => !node.outcome).map((node) => `"${node.info.label}"`)
      this.line(0, `… still working${live.length ? ` (waiting for ${live.join(', ')})` : ''}`)
    }, 1000)
    this.heartbeat.unref()
  }

  stopHeartbeat() {
    clearInterval(this.heartbeat)
  }

  delegations() {
    return [...this.nodes.values()].map((node) => ({
      runId: node.info.runId,
      tool: node.tool,
      provider: node.info.provider,
      label: node.info.label,
      depth: node.info.depth,
      parentId: node.info.parentId,
      childId: node.info.childId,
      steps: node.steps,
      toolCalls: node.toolCalls,
      stopReason: node.outcome?.stopReason,
      durationMs: node.outcome?.durationMs,
      usage: node.outcome?.usage,
      output: node.outcome?.output,
    }))
  }
}

function usageLine(agent: Agent, result: RunResult, ms: number, delegations: number): string {
  const { own, delegated } = agent.usage
  return `usage: parent ${tokens(own)} tokens (in ${own.inputTokens} / out ${own.outputTokens}) · delegated ${tokens(delegated)} tokens across ${delegations} delegation${delegations === 1 ? '' : 's'} · total ${tokens(agent.usage.total)} · ${result.steps} steps · ${seconds(ms)}`
}

/** Lines typed or piped while a turn runs wait in a queue of at most this many. */
const MAX_QUEUED_LINES = 100

async function main() {
  const options = parseArgs(process.argv.slice(2))
  // cordis logs go to stderr (stdout carries the tree, the answer or the JSON object).
  // Log lines can quote a server or a model (a diagnostic): only colour sequences are kept.
  for (const target of Logger.targets) target.print = (text: string) => process.stderr.write(terminalLog(text) + '\n')
  Logger.levels.base = options.verbose ? 3 : 1
  /** Prints text that may come from a model or an agent: escape sequences and controls removed. */
  let out = (text: string) => void process.stdout.write(terminalText(text) + '\n')

  // OTEL_EXPORTER_OTLP_ENDPOINT set: the telemetry entry of cordis.yml exports through it.
  const tracing = await startGlobalTracing('cordis-subagents-quickstart')
  const app = await startApp(options.config)
  const { ctx, loader } = app
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
    process.exit(code)
  })())
  process.on('SIGINT', () => {
    // A second Ctrl-C forces: exit now (provider-acp's exit handler SIGKILLs the agents' groups).
    if (shuttingDown) return process.exit(130)
    if (!options.json) out('\n^C: cancelling in-flight delegations and shutting down… (Ctrl-C again to force)')
    void shutdown(0)
  })
  process.on('SIGTERM', () => void shutdown(0))

  const runTurn = async (task: string) => {
    if (!options.json) {
      out(`task: ${terminalLine(task)}`)
      out(`tools: ${ctx.tools.list().map((tool) => terminalLine(tool.name)).join(', ')}`)
    }
    const before = { own: { ...agent.usage.own }, delegated: { ...agent.usage.delegated } }
    const started = Date.now()
    current = new AbortController()
    tree.startTurn()
    const result = await agent.run(task, { signal: current.signal, onEvent: tree.onRootEvent })
    tree.stopHeartbeat()
    current = undefined
    const ms = Date.now() - started
    // Interrupted: the turn was cancelled by Ctrl-C; the app is going down, nothing more to report.
    if (shuttingDown) return result
    if (options.json) {
      // One line of JSON; values exact, with every control character escaped.
      process.stdout.write(jsonLine({
        task,
        answer: result.text,
        stopReason: result.stopReason,
        ...(result.diagnostic ? { diagnostic: result.diagnostic } : {}),
        steps: result.steps,
        toolCalls: result.toolCalls,
        durationMs: ms,
        usage: { own: agent.usage.own, delegated: agent.usage.delegated, total: agent.usage.total, before },
        delegations: tree.delegations(),
      }) + '\n')
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
  closeInput = () => rl.close()
  const terminal = process.stdout.isTTY
  let busy = false
  let promptPending = false
  const ask = () => {
    promptPending = false
    if (!busy && !shuttingDown) rl.prompt(true)
  }
  // Lines printed while idle (reload messages) go above the prompt, which is then redrawn.
  const plain = out
  out = (text) => {
    if (busy || shuttingDown) return plain(text)
    if (terminal) {
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

main().catch((error) => {
  process.stderr.write(`quickstart: ${error?.stack ?? error}\n`)
  process.exit(1)
})

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`
}
