import { expect } from 'chai'
import { type Agent, type GenerateRequest, ScriptedModel } from '@cordis-subagents/agent'
import { createInProcessProvider } from '@cordis-subagents/provider-spawn'
import type { ProviderStartRequest, RunRecord, SubagentProvider, SubagentRun } from '@cordis-subagents/subagents-service'
import { agentsCreated, countingTool, type Harness, setup } from './helpers.js'

/** JSON through a string, as the store hands it back. */
const stored = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T

type Ceiling = { tools: string[]; budget?: Record<string, number> }
const ceilingOf = (run: SubagentRun) => (run.checkpoint!() as { ceiling?: Ceiling }).ceiling

/**
 * The ceiling a spawn child was started under (the tools it could see, what its tree budget had left) is part of its
 * run's checkpoint, and `restore` applies it below whatever parent the restore is given (after a restart, a fresh root
 * that sees every tool). test/durable-restore-ceiling.spec.ts does the same through the service and a real store.
 */
describe('in-process provider: the ceiling in the checkpoint, and restore', () => {
  let h: Harness
  let provider: SubagentProvider
  /** The tools the child's model was offered, per call. */
  const offered: string[][] = []

  beforeEach(async () => {
    offered.length = 0
    h = await setup({ models: { m: new ScriptedModel([]) }, tools: ['a', 'b', 'c'].map((name) => countingTool(name, [])) })
    // Asks first; once answered, answers with the tools it is offered.
    h.ctx.agents.registerModel('child', new ScriptedModel((request: GenerateRequest) => {
      const names = request.tools.map((tool) => tool.name)
      offered.push(names)
      if (!request.messages.some((m) => m.role === 'tool')) return { toolCalls: [{ name: 'ask_parent', input: { question: 'Go on?' } }] }
      return { text: `offered ${names.join(', ')}` }
    }))
    provider = createInProcessProvider(h.ctx, { name: 'spawn', inheritsParentContext: false, askParent: true })
  })
  afterEach(async () => { await h.ctx.stop() })

  function request(runId: string, parent: Agent, more: Partial<ProviderStartRequest> = {}): ProviderStartRequest {
    const signal = new AbortController().signal
    return { prompt: 'tidy', parent, signal, runId, depth: parent.depth + 1, agentOptions: { model: 'child' }, ...more }
  }

  /** A child parked on its question: its parent sees a and b (c denied), its delegation denies b, its budget 5 steps and depth 2. */
  async function parkedChild(): Promise<{ run: SubagentRun; record: RunRecord }> {
    const parent = h.ctx.agents.create({ model: 'm', tools: h.ctx.tools.view().restrict({ deny: ['c'] }) })
    const budget = parent.budget.child({ maxSteps: 5, maxDepth: 2 })
    const run = await provider.start(request('run-1', parent, { toolFilter: { deny: ['b'] }, budget }))
    expect((await run.result).stopReason).to.equal('pending')
    const checkpoint = stored(run.checkpoint!())
    const record: RunRecord = { runId: 'run-1', provider: 'spawn', parentId: '', depth: 1, state: 'parked', checkpoint }
    return { run, record }
  }

  it('the checkpoint holds the tools the child could see and what its budget had left; after dispose, the last one taken', async () => {
    const { run, record } = await parkedChild()
    expect(offered).to.deep.equal([['a', 'ask_parent']])
    // One step spent of 5; the limits with no value are left out; the parent's own and the child's own tools are not listed.
    expect((record.checkpoint as { ceiling: Ceiling }).ceiling).to.deep.equal({ tools: ['a'], budget: { maxSteps: 4, maxDepth: 2 } })
    await run.dispose()
    expect(ceilingOf(run)).to.deep.equal({ tools: ['a'], budget: { maxSteps: 4, maxDepth: 2 } })

    // A run disposed before any checkpoint was taken: its ceiling was never read, so a restore of it gets no tools.
    const quick = await provider.start(request('run-2', h.ctx.agents.create({ model: 'm' })))
    await quick.result
    await quick.dispose()
    expect(ceilingOf(quick)).to.deep.equal({ tools: [] })
  })

  it('restore below a root that sees every tool: the stored tools (and the request\'s filter), budget and depth hold', async () => {
    const { run, record } = await parkedChild()
    await run.dispose()
    const root = h.ctx.agents.create({ model: 'm' })
    const restored = await provider.restore!(record, request('run-1', root, { budget: root.budget.child() }))
    expect((await restored.result).stopReason).to.equal('pending')
    // Its next checkpoint keeps what it was restored under (a second restart loses nothing either).
    expect(ceilingOf(restored)).to.deep.equal({ tools: ['a'], budget: { maxSteps: 4, maxDepth: 2 } })
    const outcome = await restored.resume!('yes')
    expect(outcome).to.deep.include({ stopReason: 'completed', output: 'offered a, ask_parent' })
    await restored.dispose()

    // The request's own filter narrows it further (a re-run's, by task key).
    const narrower = await provider.restore!(record, request('run-1', root, { toolFilter: { deny: ['a'] } }))
    expect(ceilingOf(narrower)!.tools).to.deep.equal([])
    await narrower.dispose()
  })

  it('a checkpoint without a ceiling (stored before it was kept) restores with the request\'s parent\'s view', async () => {
    const { run, record } = await parkedChild()
    await run.dispose()
    const { ceiling: _, ...agentOnly } = record.checkpoint as Record<string, unknown>
    const root = h.ctx.agents.create({ model: 'm' })
    const restored = await provider.restore!({ ...record, checkpoint: agentOnly }, request('run-1', root))
    expect(await restored.resume!('yes')).to.deep.include({ stopReason: 'completed', output: 'offered a, b, c, ask_parent' })
    await restored.dispose()
  })

  const damaged: Array<[string, unknown, RegExp]> = [
    ['not an object', 'everything', /ceiling is not an object/],
    ['tools not a list', { tools: 'a' }, /ceiling\.tools is not a list of at most 4096 tool names/],
    ['a tool that is not a name', { tools: ['a', 'no such name!'] }, /ceiling\.tools is not a list/],
    ['too many tools', { tools: Array.from({ length: 4097 }, (_, i) => `t${i}`) }, /ceiling\.tools is not a list of at most 4096/],
    ['a budget that is a list', { tools: [], budget: [1] }, /ceiling\.budget is not an object of limits/],
    ['an unknown budget key', { tools: [], budget: { maxConcurrent: 1 } }, /ceiling\.budget has an unknown key "maxConcurrent"/],
    ['a negative limit', { tools: [], budget: { maxSteps: -1 } }, /ceiling\.budget\.maxSteps is not a non-negative integer/],
  ]
  for (const [what, ceiling, message] of damaged) {
    it(`refuses a stored ceiling that is damaged (${what}): PROVIDER_START_FAILED, and no child is made`, async () => {
      const { run, record } = await parkedChild()
      await run.dispose()
      const before = agentsCreated(h.ctx)
      const damagedRecord = { ...record, checkpoint: { ...record.checkpoint as object, ceiling } }
      const restore = provider.restore!(damagedRecord, request('run-1', h.ctx.agents.create()))
      const error = await restore.then(() => undefined, (reason: unknown) => reason as { code: string; message: string })
      expect(error).to.include({ code: 'PROVIDER_START_FAILED' })
      expect(error!.message).to.match(message).and.match(/cannot restore run run-1: .* delegate the task again as a new run\.$/)
      // Two agents since the count: the request's parent and the counting probe itself; no child.
      expect(agentsCreated(h.ctx)).to.equal(before + 2)
    })
  }
})
