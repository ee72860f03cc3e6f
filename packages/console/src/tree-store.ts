import type { Agent, RunResult } from '@cordis-subagents/agent'
import { isCount, type PendingQuestion } from '@cordis-subagents/shared'
import type { SubagentOutcome, SubagentRunInfo, SubagentUpdate } from '@cordis-subagents/subagents-service'
import { cut, TranscriptRing } from './transcript.js'

/** Agents seen starting a run before their delegation's `subagent/start` (in-process children). */
const MAX_PENDING_AGENTS = 256
/** Longest last-progress line (characters). */
const MAX_PROGRESS = 200

/** What the console knows of one node: a root run, or a delegation of the tree. */
export interface NodeRecord {
  runId: string
  treeId: string
  parentRunId?: string
  provider: string
  label: string
  childId?: string
  origin?: string
  depth: number
  /** Epoch ms when it started (shown). An ended node's `endedAt` is `startedAt + elapsedMs`. */
  startedAt: number
  endedAt?: number
  /** `performance.now()` when it started: elapsed time runs on the monotonic clock (a step of the wall clock adds none). */
  startedMono: number
  /** Once it ended: how long it ran (ms; a delegation's `durationMs`). */
  elapsedMs?: number
  steps: number
  toolCalls: number
  tokens: number
  lastProgress?: string
  stopReason?: string
  diagnostic?: string
  output?: string
  /** A root run, or a stand-in for a parent the console never saw start (`synthetic`). */
  root?: 'run' | 'synthetic'
  /** The question the run is parked on (`subagent/pending`), until it resumes or ends. */
  question?: PendingQuestion
  /** The id of the question it was answered on last (a second answer is `ALREADY_ANSWERED`). */
  answered?: string
  /** Set when the console cancelled it: the page shows this beside the provider's diagnostic. */
  cancelledHere?: boolean
  /** The in-process agent of this node (root agent, spawn/fork child): its transcript, budget and inbox. */
  agent?: Agent
  ring: TranscriptRing
}

export interface TreeRecord {
  treeId: string
  rootRunId: string
  runIds: string[]
  droppedNodes: number
}

export interface StoreLimits {
  maxTrees: number
  maxNodesPerTree: number
  maxTranscriptEntries: number
  maxEntryChars: number
}

/**
 * Live and recent delegation trees, built from the agent runtime's observer (root runs, the
 * in-process agents) and the service's `subagent/*` events. Bounded: `maxTrees` trees of at most
 * `maxNodesPerTree` nodes, each with a ring of transcript entries. `changed` hears every node
 * that changed; `evicted` every tree dropped.
 */
export class TreeStore {
  readonly trees = new Map<string, TreeRecord>()
  readonly nodes = new Map<string, NodeRecord>()
  /** Agent id → the node it runs (a root agent: its latest run). */
  private readonly nodeOfAgent = new Map<string, string>()
  private readonly pendingAgents = new Map<string, Agent>()
  private sequence = 0

  constructor(
    private readonly limits: StoreLimits,
    private readonly changed: (runId: string) => void,
    private readonly evicted: (treeId: string) => void,
  ) {}

  /** An agent of the runtime begins a run. */
  runStart(agent: Agent, prompt: string, resumed?: string): void {
    if (agent.parent) {
      this.pendingAgents.delete(agent.id)
      this.pendingAgents.set(agent.id, agent)
      if (this.pendingAgents.size > MAX_PENDING_AGENTS) this.pendingAgents.delete(this.pendingAgents.keys().next().value!)
      return
    }
    // A root turn parked on a question goes on (answered here, on the page, or by the host): the same node, not a second root.
    const parked = resumed === undefined ? undefined : this.nodeOf(agent)
    if (parked?.root === 'run' && parked.stopReason === 'pending') {
      Object.assign(parked, { endedAt: undefined, elapsedMs: undefined, stopReason: undefined, output: undefined, diagnostic: undefined })
      this.changed(parked.runId)
      return
    }
    const runId = `root-${++this.sequence}`
    const node = this.newNode({ runId, treeId: runId, provider: 'root', label: agent.label ?? agent.id, depth: agent.depth, root: 'run', agent })
    node.lastProgress = cut(oneLine(prompt), MAX_PROGRESS)
    this.addTree(node)
  }

  runEnd(agent: Agent, result: RunResult): void {
    const node = this.nodeOf(agent)
    if (node?.root !== 'run' || node.endedAt !== undefined) return
    const elapsedMs = Math.round(performance.now() - node.startedMono)
    Object.assign(node, {
      endedAt: node.startedAt + elapsedMs, elapsedMs, stopReason: result.stopReason, steps: result.steps, toolCalls: result.toolCalls,
    })
    node.tokens = result.usage.inputTokens + result.usage.outputTokens
    if (result.diagnostic) node.diagnostic = cut(result.diagnostic, this.limits.maxEntryChars)
    node.output = cut(result.text, this.limits.maxEntryChars)
    this.changed(node.runId)
  }

  /** A root agent's model call ended or tool call began: its counters and last line move. */
  rootStep(agent: Agent, step: number, line?: string): void {
    const node = this.nodeOf(agent)
    if (node?.root !== 'run' || node.endedAt !== undefined) return
    node.steps = Math.max(node.steps, step)
    if (line) {
      node.toolCalls++
      node.lastProgress = cut(oneLine(line), MAX_PROGRESS)
    }
    this.changed(node.runId)
  }

  start(info: SubagentRunInfo): void {
    let parent = this.nodes.get(this.nodeOfAgent.get(info.parentId) ?? '')
    if (!parent) {
      parent = this.newNode({ runId: `parent-${++this.sequence}`, treeId: '', provider: 'root', label: `agent ${info.parentId}`, depth: info.depth - 1, root: 'synthetic' })
      parent.treeId = parent.runId
      this.addTree(parent)
      this.nodeOfAgent.set(info.parentId, parent.runId)
    }
    const tree = this.trees.get(parent.treeId)!
    if (tree.runIds.length >= this.limits.maxNodesPerTree) {
      tree.droppedNodes++
      this.changed(tree.rootRunId)
      return
    }
    const agent = info.childId ? this.pendingAgents.get(info.childId) : undefined
    if (agent) this.pendingAgents.delete(agent.id)
    const node = this.newNode({
      runId: info.runId, treeId: tree.treeId, parentRunId: parent.runId, provider: info.provider, label: info.label ?? info.runId,
      // The service's start (epoch ms) as a monotonic time: how long ago it was, read once, at the hand-over.
      depth: info.depth, startedAt: info.startedAt, startedMono: performance.now() - Math.max(0, Date.now() - info.startedAt), agent,
      ...info.childId ? { childId: info.childId } : {}, ...info.origin ? { origin: info.origin } : {},
    })
    tree.runIds.push(node.runId)
    this.nodes.set(node.runId, node)
    if (info.childId) this.nodeOfAgent.set(info.childId, node.runId)
    this.changed(node.runId)
  }

  update(info: SubagentRunInfo, update: SubagentUpdate): void {
    const node = this.nodes.get(info.runId)
    if (!node || node.endedAt !== undefined) return
    if (update.kind === 'step') node.steps = Math.max(node.steps, typeof update.step === 'number' ? update.step : node.steps + 1)
    else if (update.kind === 'usage' && update.usage) node.tokens = Math.max(node.tokens, tokensOf(update.usage))
    else {
      if (update.kind === 'tool-call') node.toolCalls++
      const line = progressLine(update)
      if (line) node.lastProgress = cut(line, MAX_PROGRESS)
      node.ring.record(update)
    }
    this.changed(node.runId)
  }

  /** The run parked on `question` (it waits for an answer; the page offers an answer box). */
  parked(info: SubagentRunInfo, question: PendingQuestion): void {
    const node = this.nodes.get(info.runId)
    if (!node || node.endedAt !== undefined) return
    node.question = { ...question, text: cut(question.text, this.limits.maxEntryChars) }
    this.changed(node.runId)
  }

  /** The parked run goes on. */
  resumed(runId: string): void {
    const node = this.nodes.get(runId)
    if (!node?.question) return
    node.answered = node.question.id
    node.question = undefined
    this.changed(node.runId)
  }

  end(info: SubagentRunInfo, outcome: SubagentOutcome): void {
    const node = this.nodes.get(info.runId)
    if (!node) return
    node.question = undefined
    node.endedAt = node.startedAt + outcome.durationMs
    node.elapsedMs = outcome.durationMs
    node.stopReason = outcome.stopReason
    if (outcome.diagnostic) node.diagnostic = cut(outcome.diagnostic, this.limits.maxEntryChars)
    node.output = cut(outcome.output, this.limits.maxEntryChars)
    if (outcome.usage) node.tokens = Math.max(node.tokens, tokensOf(outcome.usage))
    node.steps = Math.max(node.steps, outcome.work.steps)
    node.toolCalls = Math.max(node.toolCalls, outcome.work.toolCalls)
    this.changed(node.runId)
  }

  /** Whether any node of the tree still runs (a synthetic root runs while a child does). */
  live(tree: TreeRecord): boolean {
    return tree.runIds.some((runId) => {
      const node = this.nodes.get(runId)
      return node !== undefined && node.root !== 'synthetic' && node.endedAt === undefined
    })
  }

  private nodeOf(agent: Agent): NodeRecord | undefined {
    return this.nodes.get(this.nodeOfAgent.get(agent.id) ?? '')
  }

  private newNode(fields: Partial<NodeRecord> & Pick<NodeRecord, 'runId' | 'treeId' | 'provider' | 'label' | 'depth'>): NodeRecord {
    return {
      startedAt: Date.now(), startedMono: performance.now(), steps: 0, toolCalls: 0, tokens: 0,
      ring: new TranscriptRing(this.limits.maxTranscriptEntries, this.limits.maxEntryChars),
      ...fields,
      label: cut(oneLine(fields.label), MAX_PROGRESS),
    }
  }

  private addTree(root: NodeRecord): void {
    this.trees.set(root.treeId, { treeId: root.treeId, rootRunId: root.runId, runIds: [root.runId], droppedNodes: 0 })
    this.nodes.set(root.runId, root)
    if (root.agent) this.nodeOfAgent.set(root.agent.id, root.runId)
    this.changed(root.runId)
    while (this.trees.size > this.limits.maxTrees) this.evict()
  }

  /** Drops the oldest ended tree, else the oldest tree. */
  private evict(): void {
    let victim: TreeRecord | undefined
    for (const tree of this.trees.values()) {
      if (!this.live(tree)) { victim = tree; break }
    }
    victim ??= this.trees.values().next().value!
    this.trees.delete(victim.treeId)
    for (const runId of victim.runIds) {
      const node = this.nodes.get(runId)
      this.nodes.delete(runId)
      for (const id of [node?.agent?.id, node?.childId]) {
        if (id && this.nodeOfAgent.get(id) === runId) this.nodeOfAgent.delete(id)
      }
    }
    for (const [agentId, runId] of this.nodeOfAgent) if (runId === victim.rootRunId) this.nodeOfAgent.delete(agentId)
    this.evicted(victim.treeId)
  }
}

function tokensOf(usage: { inputTokens: number; outputTokens: number }): number {
  const total = usage.inputTokens + usage.outputTokens
  return isCount(total) ? total : 0
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim()
}

/** The page's one-line summary of an update. */
function progressLine(update: SubagentUpdate): string | undefined {
  const tool = typeof update.tool === 'string' ? update.tool : 'a tool'
  if (update.kind === 'tool-call') return `calls ${tool}`
  if (update.kind === 'tool-result') return `${tool} ${update.isError ? 'failed' : 'returned'}`
  return typeof update.text === 'string' && update.text.trim() ? oneLine(update.text) : undefined
}
