// Issue 44 item 4 over real spawn children: a root run's result accounts for every delegation of its tree
// (`result.children`), whatever the tree does: sync, background, failing, timed-out, cancelled and parked children.
import { expect } from 'chai'
import fc from 'fast-check'
import type { DelegationState, GenerateRequest, ScriptedResponse } from '@cordis-subagents/agent'
import { ScriptedModel } from '@cordis-subagents/agent'
import * as Spawn from '@cordis-subagents/provider-spawn'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import { MAX_ACCOUNT_LISTED } from '@cordis-subagents/subagents-service'
import { startHost, type Host } from './support/host.js'
import { deferred, until } from './support/async.js'

/** How a node ends its own turn, after starting its children. */
type Kind = 'ok' | 'fail' | 'hang' | 'cancel' | 'park'
/** Through which tool its parent starts it. */
type Via = 'sync' | 'background' | 'slow'

interface Node {
  id: string
  kind: Kind
  via: Via
  kids: Node[]
}

/** The tree's nodes below the root, depth first. */
const below = (node: Node): Node[] => node.kids.flatMap((kid) => [kid, ...below(kid)])

/**
 * A random tree of at most depth 3 (the service's ceiling) and 4 children a node. A background child never
 * parks (its parent's turn would wait on it for ever) and `hang` children are started through the tool with
 * a short timeout. A node that parks, hangs or is cancelled has no children (it would cut its subtree short).
 */
function treeArb(): fc.Arbitrary<Node> {
  let next = 0
  const kinds: Kind[] = ['ok', 'ok', 'fail', 'hang', 'cancel']
  const kid = (depth: number, parent: Kind): fc.Arbitrary<Node> => fc.record({
    // Only the root's children park: a parked grandchild would be closed with its parent's end.
    kind: fc.constantFrom<Kind>(...(depth === 1 ? [...kinds, 'park'] as Kind[] : kinds)),
    background: fc.boolean(),
    kids: depth < 3 ? fc.array(fc.constant(null), { maxLength: 3 }) : fc.constant([]),
  }).chain(({ kind, background, kids }) => {
    const leaf = kind === 'hang' || kind === 'cancel' || kind === 'park'
    // A failing parent ends its turn at once: a background child of it would be cancelled with it (a race), so its children are sync.
    const via: Via = kind === 'hang' ? 'slow' : background && kind !== 'park' && parent !== 'fail' ? 'background' : 'sync'
    const count = leaf ? 0 : kids.length
    return (count ? fc.tuple(...Array.from({ length: count }, () => kid(depth + 1, kind))) : fc.constant([] as Node[]))
      .map((children) => ({ id: '', kind, via, kids: children }))
  })
  // Fresh nodes with their ids (a generated value is never mutated: the shrinker reuses them).
  const named = (node: Node): Node => ({ ...node, id: `n${++next}`, kids: node.kids.map(named) })
  return fc.array(kid(1, 'ok'), { minLength: 1, maxLength: 4 }).map((kids) => {
    next = 0
    return { id: 'n0', kind: 'ok', via: 'sync', kids: kids.map(named) }
  })
}

const TOOLS: Record<Via, string> = { sync: 'subagent', background: 'subagent_bg', slow: 'subagent_slow' }

/** The state a node's delegation ends in, as its parent sees it. */
const EXPECTED: Record<Kind, DelegationState> = { ok: 'completed', fail: 'error', hang: 'timeout', cancel: 'aborted', park: 'completed' }

async function runTree(root: Node) {
  const host: Host = await startHost({
    subagents: { maxChildren: 500, maxConcurrent: 500 },
    before(ctx) {
      ctx.plugin(Spawn, { name: 'spawn', askParent: true })
      ctx.plugin(SubagentTool, { provider: 'spawn', nested: true, questions: 'escalate' })
      ctx.plugin(SubagentTool, { provider: 'spawn', nested: true, toolName: 'subagent_bg', mode: 'background' })
      ctx.plugin(SubagentTool, { provider: 'spawn', nested: true, toolName: 'subagent_slow', timeout: 30 })
    },
  })
  const nodes = new Map([root, ...below(root)].map((node) => [node.id, node]))
  const runIds = new Map<string, string>()
  host.ctx.subagents.observe({ 'subagent/start': (info) => { if (info.label) runIds.set(info.label, info.runId) } })
  const started = new Set<string>()
  host.ctx.agents.registerModel('tree', new ScriptedModel(async (request: GenerateRequest): Promise<ScriptedResponse> => {
    const id = /^node (n\d+)$/.exec(request.messages[0]?.content ?? '')?.[1] ?? 'n0'
    const node = nodes.get(id)!
    if (node.kids.length && !started.has(id)) {
      started.add(id)
      return { toolCalls: node.kids.map((kid) => ({ name: TOOLS[kid.via], input: { description: kid.id, prompt: `node ${kid.id}` } })) }
    }
    switch (node.kind) {
      case 'fail': return { text: '', finishReason: 'error' }
      case 'park':
        // Asks once; answered (the test resumes the root with the answer), it finishes.
        if (request.messages.some((message) => message.role === 'tool' && message.name === 'ask_parent')) return { text: `${id} answered` }
        return ScriptedModel.call('ask_parent', { question: `${id} needs an answer` })
      case 'cancel':
        await until(() => runIds.has(id), `${id} handed over`)
        host.ctx.subagents.cancel(runIds.get(id)!)
      // falls through: a cancelled or hanging child waits for its signal
      case 'hang': return new Promise((_, reject) => request.signal?.addEventListener('abort', () => reject(new Error('aborted')), { once: true }))
      default: return { text: `${id} done` }
    }
  }))
  const agent = host.ctx.agents.create({ model: 'tree' })
  // A parked child's question rides up (`questions: escalate`): the root's run ends `pending`, its account
  // shows that child parked; the test answers and the turn goes on, until it ends.
  let result = await agent.run('node n0')
  const parked: string[][] = []
  while (result.stopReason === 'pending') {
    const asking = /^(n\d+) needs an answer$/.exec(result.question!.text)![1]
    parked.push([asking, ...result.children!.listed.filter((entry) => entry.state === 'pending').map((entry) => entry.label!)])
    result = await agent.resume('the answer')
  }
  await agent.dispose()
  await host.stop()
  return { result, runIds, parked }
}

describe('the root\'s account of its tree (issue 44 item 4)', () => {
  it('property: no delegation of a random tree (sync, background, failing, timed-out, cancelled, parked) is missing from the root\'s result', async () => {
    await fc.assert(fc.asyncProperty(treeArb(), async (root) => {
      const { result, runIds, parked } = await runTree(root)
      // Each pending result's account listed the asking child as parked (pending).
      for (const [asking, ...pending] of parked) expect(pending).to.include(asking)
      expect(parked.length).to.equal(below(root).filter((node) => node.kind === 'park').length)
      const nodes = below(root)
      const account = result.children!
      expect(account, 'the root delegated, so its result has an account').to.not.equal(undefined)
      expect(account.total).to.equal(nodes.length)
      expect(account.omitted).to.equal(0)
      expect(account.listed.map((entry) => entry.label).sort()).to.deep.equal(nodes.map((node) => node.id).sort())
      for (const node of nodes) {
        const entry = account.listed.find((listed) => listed.label === node.id)!
        expect(entry.runId).to.equal(runIds.get(node.id))
        expect(entry.state, `${node.id} (${node.kind} via ${node.via})`).to.equal(EXPECTED[node.kind])
      }
      const states = Object.values(account.states).reduce((sum, n) => sum + n!, 0)
      expect(states).to.equal(nodes.length)
    }), { numRuns: Number(process.env.ACCOUNT_RUNS ?? 25) })
  })

  it('a background result the parent\'s model has not read is reported unread, in the result and by account(), until a turn reads it', async () => {
    const release = deferred<void>()
    const host = await startHost({
      before(ctx) {
        ctx.plugin(Spawn, { name: 'spawn' })
        ctx.plugin(SubagentTool, { provider: 'spawn', toolName: 'subagent_bg', mode: 'background', onTurnEnd: 'end' })
      },
    })
    try {
      let rootCalls = 0
      host.ctx.agents.registerModel('m', new ScriptedModel(async (request: GenerateRequest) => {
        if ((request.system ?? '').includes('You are a subagent')) {
          await release.promise
          return { text: 'late finding' }
        }
        rootCalls++
        return rootCalls === 1 ? ScriptedModel.call('subagent_bg', { description: 'late', prompt: 'Find it.' }) : { text: `turn ${rootCalls}` }
      }))
      const agent = host.ctx.agents.create({ model: 'm' })
      const first = await agent.run('go')
      expect(first.children).to.deep.include({ total: 1, unread: 0, omitted: 0, states: { running: 1 } })
      release.resolve()
      await until(() => host.ctx.subagents.account(agent)?.states.completed === 1, 'the child ended')
      const between = host.ctx.subagents.account(agent)!
      expect(between.unread).to.equal(1)
      expect(between.listed[0]).to.include({ label: 'late', state: 'completed', unread: true })
      // The next turn reads the message first: its result accounts for the child as read.
      const second = await agent.run('and now?')
      expect(second.children).to.deep.include({ total: 1, unread: 0 })
      expect(second.children!.listed[0].unread).to.equal(undefined)
      await agent.dispose()
    } finally {
      await host.stop()
    }
  })

  it('a turn\'s result accounts for that turn: a root that delegates in every turn gets one entry per turn, account() has them all', async () => {
    const host = await startHost({
      before(ctx) {
        ctx.plugin(Spawn, { name: 'spawn' })
        ctx.plugin(SubagentTool, { provider: 'spawn', toolName: 'subagent' })
      },
    })
    try {
      host.ctx.agents.registerModel('m', new ScriptedModel((request: GenerateRequest) => {
        if ((request.system ?? '').includes('You are a subagent')) return { text: 'done' }
        const last = request.messages[request.messages.length - 1]
        return last.role === 'tool' ? { text: 'turn over' } : ScriptedModel.call('subagent', { description: 'part', prompt: 'Do it.' })
      }))
      const agent = host.ctx.agents.create({ model: 'm' })
      for (let turn = 1; turn <= 5; turn++) {
        const result = await agent.run(`turn ${turn}`)
        // Only this turn's delegation: a root of a long chat must not rebuild its whole history at every turn's end.
        expect(result.children).to.deep.include({ total: 1, unread: 0, omitted: 0, states: { completed: 1 } })
      }
      expect(host.ctx.subagents.account(agent)).to.deep.include({ total: 5, states: { completed: 5 } })
      await agent.dispose()
    } finally {
      await host.stop()
    }
  })

  it('is bounded: 10,000 delegations of one root are all counted; the list, and what the tree keeps, are capped at MAX_ACCOUNT_LISTED (the latest)', async function () {
    this.timeout(120_000)
    const host = await startHost({ subagents: { maxChildren: 20_000, maxConcurrent: 64, maxConcurrentPerParent: 64 } })
    try {
      const stops = ['completed', 'error', 'aborted', 'budget'] as const
      let n = 0
      host.ctx.subagents.register({
        name: 'instant',
        capabilities: { persona: false, toolFilter: false, depthLimit: false },
        inheritsParentContext: false,
        start: (request) => Promise.resolve({
          id: request.runId,
          result: Promise.resolve({ stopReason: stops[n++ % stops.length], output: 'ok' }),
          cancel() {},
          dispose: () => Promise.resolve(),
        }),
      })
      const root = host.ctx.agents.create({})
      const signal = new AbortController().signal
      const batches: string[][] = []
      for (let i = 0; i < 10_000; i += 50) {
        const batch: string[] = []
        batches.push(batch)
        await Promise.all(Array.from({ length: 50 }, async () => {
          const run = await host.ctx.subagents.delegate('instant', { prompt: 'x', parent: root, signal })
          batch.push(run.id)
          await run.result
          await run.dispose()
        }))
      }
      const account = host.ctx.subagents.account(root)!
      expect(account.total).to.equal(10_000)
      expect(account.listed).to.have.length(MAX_ACCOUNT_LISTED)
      expect(account.omitted).to.equal(10_000 - MAX_ACCOUNT_LISTED)
      expect(account.states).to.deep.equal({ completed: 2500, error: 2500, aborted: 2500, budget: 2500 })
      // The tree keeps the latest ended entries (the last 20 batches of 50), the older ones only counted.
      expect(new Set(account.listed.map((entry) => entry.runId))).to.deep.equal(new Set(batches.slice(-20).flat()))
      await root.dispose()
    } finally {
      await host.stop()
    }
  })
})
