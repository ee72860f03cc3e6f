import type { Agent } from '@cordis-subagents/agent'
import type { BackgroundTask, SubagentService } from '@cordis-subagents/subagents-service'
import type { Transport } from './config.js'
import type { NodeRecord, TreeRecord, TreeStore } from './tree-store.js'

/** The reason a cancel from the page carries (the page shows it beside the child's diagnostic). */
export const CANCEL_REASON = 'cancelled from the console'

/** One limit of a node's budget and how much of it is used. */
export interface BudgetUse {
  name: 'steps per turn' | 'steps' | 'tokens' | 'tool calls' | 'wall ms' | 'delegations'
  used: number
  limit: number
}

/** A node as the page gets it. */
export interface NodeView {
  runId: string
  treeId: string
  parentRunId?: string
  provider: string
  transport: Transport | 'root'
  background: boolean
  label: string
  childId?: string
  depth: number
  state: 'running' | 'ended'
  /** Epoch ms when it started; an ended node's `endedAt` is `startedAt + elapsedMs`. */
  startedAt: number
  endedAt?: number
  /** How long it ran (ms), up to now while it runs: monotonic clock, so a step of the host's wall clock does not show. */
  elapsedMs: number
  steps: number
  toolCalls: number
  tokens: number
  budget: BudgetUse[]
  lastProgress?: string
  stopReason?: string
  diagnostic?: string
  output?: string
  /** The question the run is parked on: the page shows it with an answer box. */
  question?: { id: string; kind: string; text: string; path: string[]; options?: { id: string; name: string }[] }
  /** What the page may offer: cancel it, send it a message, answer its question. */
  can: { cancel: boolean; send: boolean; answer: boolean }
  /** A background result that ended and that its parent's model has not read (in its inbox, or lost unread). */
  unread?: true
}

export interface TreeView {
  treeId: string
  rootRunId: string
  live: boolean
  droppedNodes: number
}

/** The pieces a view needs from the host: the service (background books) and the transports. */
export interface ViewHost {
  store: TreeStore
  subagents: SubagentService
  transports?: Record<string, Transport>
}

export function treeView(host: ViewHost, tree: TreeRecord): TreeView {
  return { treeId: tree.treeId, rootRunId: tree.rootRunId, live: host.store.live(tree), droppedNodes: tree.droppedNodes }
}

export function nodeView(host: ViewHost, node: NodeRecord): NodeView {
  const task = backgroundTaskOf(host, node)
  const running = node.root === 'synthetic' ? host.store.live(host.store.trees.get(node.treeId)!) : node.endedAt === undefined
  const inProcessChild = !node.root && node.agent !== undefined
  const view: NodeView = {
    runId: node.runId,
    treeId: node.treeId,
    provider: node.provider,
    transport: transportOf(host, node),
    background: task !== undefined,
    label: node.label,
    depth: node.depth,
    state: running ? 'running' : 'ended',
    startedAt: node.startedAt,
    elapsedMs: node.elapsedMs ?? Math.round(performance.now() - node.startedMono),
    steps: node.steps,
    toolCalls: node.toolCalls,
    tokens: node.agent && running ? Math.max(node.tokens, tokensOf(node.agent)) : node.tokens,
    budget: node.agent ? budgetOf(node.agent, node.steps, node.root !== 'run' || running) : [],
    can: {
      cancel: running && !node.root,
      send: running && !node.question && (task?.run !== undefined || inProcessChild),
      answer: running && !node.root && node.question !== undefined,
    },
  }
  for (const key of ['parentRunId', 'childId', 'endedAt', 'lastProgress', 'stopReason', 'diagnostic', 'output'] as const) {
    if (node[key] !== undefined) (view as unknown as Record<string, unknown>)[key] = node[key]
  }
  if (node.question) {
    const { id, kind, text, path, options } = node.question
    view.question = { id, kind, text, path: [...path], ...options ? { options: options.map(({ id, name }) => ({ id, name })) } : {} }
  }
  const parent = task && host.store.nodes.get(node.parentRunId ?? '')?.agent
  if (task && parent && host.subagents.background.peek(parent)?.unread(task)) view.unread = true
  if (node.cancelledHere && node.endedAt !== undefined) view.diagnostic = `${CANCEL_REASON}${node.diagnostic ? `; ${node.diagnostic}` : ''}`
  return view
}

/** Tokens an in-process agent spent so far, its children's included. */
function tokensOf(agent: Agent): number {
  return agent.usage.total.inputTokens + agent.usage.total.outputTokens
}

/** The background task that runs this node, when its parent started it in the background. */
export function backgroundTaskOf(host: ViewHost, node: NodeRecord): BackgroundTask | undefined {
  const parent = node.parentRunId ? host.store.nodes.get(node.parentRunId)?.agent : undefined
  if (!parent) return undefined
  return host.subagents.background.peek(parent)?.list().find((task) => task.run?.id === node.runId)
}

/**
 * How the child is reached. In-process children are seen by the agent observer (fork: the
 * provider inherits the parent's context); provider-a2a carries its remote's agent card;
 * provider-acp reports how it got its agent process (`origin`) when it pools processes; else a
 * description naming ACP or A2A, or the providers' default names. Config `transports` overrides it.
 */
function transportOf(host: ViewHost, node: NodeRecord): Transport | 'root' {
  if (node.root) return 'root'
  // Own entries only: a provider named `constructor` or `__proto__` is not configured by every object's prototype.
  const configured = host.transports && Object.hasOwn(host.transports, node.provider) ? host.transports[node.provider] : undefined
  if (configured) return configured
  const provider = host.subagents.get(node.provider)
  if (node.agent) return provider?.inheritsParentContext ? 'fork' : 'spawn'
  // provider-a2a carries the remote's agent card (its `origin` is the host that took the task).
  if (provider && 'card' in provider && 'protocol' in provider) return 'a2a'
  if (node.origin) return 'acp'
  const description = provider?.description ?? ''
  if (/\bA2A\b/.test(description)) return 'a2a'
  if (/\bACP\b/.test(description)) return 'acp'
  return node.provider === 'acp' || node.provider === 'a2a' ? node.provider : 'remote'
}

/**
 * The limits that bind this agent (finite ones) and what is used of each. A root agent gets a
 * fresh budget per run, so an ended root run (`current` false) shows its step count only.
 */
function budgetOf(agent: Agent, steps: number, current: boolean): BudgetUse[] {
  const uses: BudgetUse[] = [{ name: 'steps per turn', used: steps, limit: agent.maxSteps }]
  if (!current) return uses
  const limits = agent.budget.limits
  const left = agent.budget.remaining()
  const add = (name: BudgetUse['name'], key: 'maxSteps' | 'maxTokens' | 'maxToolCalls' | 'maxWallMs' | 'maxChildren') => {
    if (Number.isFinite(limits[key])) uses.push({ name, used: Math.max(0, limits[key] - Math.max(0, left[key])), limit: limits[key] })
  }
  add('steps', 'maxSteps')
  add('tokens', 'maxTokens')
  add('tool calls', 'maxToolCalls')
  add('wall ms', 'maxWallMs')
  add('delegations', 'maxChildren')
  return uses
}
