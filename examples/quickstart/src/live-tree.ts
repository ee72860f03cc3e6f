// What the CLI prints while a turn runs: the live delegation tree and the usage line.
import type { Agent, AgentEvent, RunResult } from '@cordis-subagents/agent'
import type { SubagentOutcome, SubagentRunInfo, SubagentUpdate } from '@cordis-subagents/subagents-service'
import type { Usage } from '@cordis-subagents/shared'
import type { App } from './app.js'
import { terminalLine } from './terminal-text.js'

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
export class Tree {
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
      const input = event.call.input as { description?: unknown; agent?: unknown } | undefined
      // A team tool's call (`delegate`, --team) names its member: shown as `delegate:reviewer`.
      const team = event.call.name === 'delegate' && typeof input?.agent === 'string'
      if ((event.call.name.startsWith('subagent') || team) && typeof input?.description === 'string') {
        this.toolByLabel.set(input.description.trim(), team ? `${event.call.name}:${String(input.agent)}` : event.call.name)
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

export function usageLine(agent: Agent, result: RunResult, ms: number, delegations: number): string {
  const { own, delegated } = agent.usage
  return `usage: parent ${tokens(own)} tokens (in ${own.inputTokens} / out ${own.outputTokens}) · delegated ${tokens(delegated)} tokens across ${delegations} delegation${delegations === 1 ? '' : 's'} · total ${tokens(agent.usage.total)} · ${result.steps} steps · ${seconds(ms)}`
}


function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`
}
