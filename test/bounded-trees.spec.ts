// Bounded delegation trees, end to end: real Context, real services, the real subagent tool and
// spawn provider, scripted models. A model that always delegates, wide trees, shared budgets, the
// three limit stop reasons, a 10,000-deep cancel and ctx.stop() in a 1,000-wide tree.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { expect } from 'chai'
import { Context } from 'cordis'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime, {
  type Agent, type AgentEvent, type GenerateRequest, ScriptedModel, type ScriptedResponse,
} from '@cordis-subagents/agent'
import SubagentService, { type Config as ServiceConfig, type SubagentOutcome, type SubagentRunInfo } from '@cordis-subagents/subagents-service'
import * as Spawn from '@cordis-subagents/provider-spawn'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import { startApp } from '@cordis-subagents/quickstart/app'
import { captureLogs } from './support/logs.js'
import { deferred } from './support/async.js'
import { ROOT } from './helpers.js'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

const delegate = (prompt: string) => ({ name: 'subagent', input: { description: 'delegated part', prompt } })

/** "level 3" → 3: the scripted models below put the depth they intend into the prompt. */
function levelOf(request: GenerateRequest): number {
  const first = request.messages.find((message) => message.role === 'user')
  return Number(/level (\d+)/.exec(first?.content ?? '')?.[1] ?? 0)
}

function isFirstStep(request: GenerateRequest): boolean {
  return request.messages[request.messages.length - 1].role === 'user'
}

interface Rig {
  ctx: Context
  starts: SubagentRunInfo[]
  ends: Array<{ info: SubagentRunInfo; result: SubagentOutcome }>
  stop(): Promise<void>
}

/** tools + agents + subagents (+ spawn and the `subagent` tool), with the given configs; events observed outside every scope. */
async function rig(options: {
  model: ScriptedModel
  agents?: AgentRuntime.Config
  subagents?: Partial<ServiceConfig>
  tool?: Record<string, unknown>
}): Promise<Rig> {
  const logs = captureLogs()
  const ctx = new Context()
  ctx.plugin(ToolRegistry)
  ctx.plugin(AgentRuntime, { model: 'm', ...options.agents })
  ctx.plugin(SubagentService, options.subagents ?? {})
  await ctx.start()
  await ctx.lifecycle.flush()
  ctx.agents.registerModel('m', options.model)
  ctx.plugin(Spawn)
  // Every tree in this file nests: the tool load opts in (children see it; by default they do not).
  ctx.plugin(SubagentTool as any, { provider: 'spawn', nested: true, ...options.tool })
  await ctx.lifecycle.flush()
  const starts: SubagentRunInfo[] = []
  const ends: Rig['ends'] = []
  const hooks = ctx.lifecycle._hooks as Record<string, { ctx: unknown; callback: (...args: any[]) => void }[]>
  ;(hooks['subagent/start'] ||= []).push({ ctx, callback: (info: SubagentRunInfo) => { starts.push(info) } })
  ;(hooks['subagent/end'] ||= []).push({ ctx, callback: (info: SubagentRunInfo, result: SubagentOutcome) => { ends.push({ info, result }) } })
  let stopped = false
  return {
    ctx,
    starts,
    ends,
    async stop() {
      if (stopped) return
      stopped = true
      await ctx.stop()
      logs.restore()
    },
  }
}

function toolResults(agent: Agent): string[] {
  return agent.transcript.messages.filter((message) => message.role === 'tool').map((message) => message.content)
}

describe('bounded delegation trees (end to end)', function () {
  this.timeout(60_000)
  let r: Rig | undefined

  afterEach(async () => {
    await r?.stop()
    r = undefined
  })

  /** The README's cordis.yml (its model swapped for `always`), `edit`ed, run by an always-delegating model. */
  async function alwaysDelegate(edit: (yaml: string) => string) {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
    const section = readme.slice(readme.indexOf('## cordis.yml: the tool loaded twice'))
    const yaml = /```yaml\n([\s\S]*?)```/.exec(section)![1]
    expect(yaml).to.not.match(/maxDepth|maxChildren|budget|nested/) // nothing configured: the defaults do the work
    const dir = mkdtempSync(join(tmpdir(), 'bounded-readme-'))
    const file = join(dir, 'cordis.yml')
    // The README's model is `openai`; this machine has no key, so agents use a scripted model instead.
    writeFileSync(file, edit(yaml.replace('model: openai', 'model: always')))
    const logs = captureLogs()
    const app = await startApp(file)
    try {
      const always = new ScriptedModel(() => ({ toolCalls: [delegate('Do the task by delegating it.')] }))
      app.ctx.agents.registerModel('always', always)
      const starts: SubagentRunInfo[] = []
      app.ctx.on('subagent/start', (info) => { starts.push(info) })
      expect(app.ctx.tools.list().map((tool) => tool.name)).to.include('subagent')
      gc()
      const heapBefore = process.memoryUsage().heapUsed
      const began = performance.now()
      const root = app.ctx.agents.create({ label: 'root' })
      const result = await root.run('Solve it.')
      const elapsed = performance.now() - began
      gc()
      const heapAfter = process.memoryUsage().heapUsed
      expect(result.stopReason).to.equal('max-steps') // the root's model never answers; its own step limit ends it
      expect(result.work.own.delegations + result.work.delegated.delegations).to.equal(starts.length)
      expect(app.ctx.subagents.runs()).to.deep.equal([])
      await root.dispose()
      expect(heapAfter - heapBefore).to.be.below(64 * 1048576)
      const toolTexts = always.requests.flatMap((request) => request.messages).filter((m) => m.role === 'tool').map((m) => m.content)
      return { always, starts, elapsed, toolTexts, heapMiB: (heapAfter - heapBefore) / 1048576 }
    } finally {
      await app.stop()
      logs.restore()
      rmSync(dir, { recursive: true, force: true })
    }
  }

  it('the README cordis.yml, no limits configured: a model that always delegates gets one level (children have no subagent tool) and at most maxChildren (16) delegations, host alive, heap flat', async () => {
    const r = await alwaysDelegate((yaml) => yaml)
    expect(Math.max(...r.starts.map((info) => info.depth))).to.equal(1)
    expect(r.starts).to.have.length(16)
    // The children were never offered the tool; their calls by name were unknown tools.
    const childRequests = r.always.requests.filter((request) => request.system?.includes('You are a subagent'))
    expect(childRequests.length).to.be.greaterThan(0)
    for (const request of childRequests) expect(request.tools.map((tool) => tool.name)).to.not.include('subagent')
    expect(r.toolTexts.filter((text) => text.startsWith('Unknown tool "subagent"')).length).to.be.greaterThan(0)
    // The root's 17th delegation was refused with the limit named.
    expect(r.toolTexts.some((text) => text.includes('BUDGET_EXCEEDED') && text.includes('children budget (16 delegations; 16 spent)'))).to.equal(true)
    console.log(`      always-delegate, README as written: ${r.starts.length} delegations, deepest 1, ${r.elapsed.toFixed(0)} ms, heap ${r.heapMiB.toFixed(1)} MiB`)
  })

  it('the README cordis.yml with `nested: true`: a model that always delegates stops at depth 3 and maxChildren (16)', async () => {
    const r = await alwaysDelegate((yaml) => yaml.replace('provider: spawn ', 'nested: true\n    provider: spawn '))
    expect(Math.max(...r.starts.map((info) => info.depth))).to.equal(3)
    expect(r.starts.length).to.be.at.most(16)
    // The depth-3 children were told why they could not go deeper, with the numbers.
    expect(r.toolTexts.some((text) => text.includes('DEPTH_EXCEEDED') && text.includes('would have depth 4'))).to.equal(true)
    console.log(`      always-delegate, nested: ${r.starts.length} delegations, deepest 3, ${r.elapsed.toFixed(0)} ms, heap ${r.heapMiB.toFixed(1)} MiB`)
  })

  it('a depth-3 child that delegates gets DEPTH_EXCEEDED with both numbers as a tool error', async () => {
    const model = new ScriptedModel((request) => {
      const level = levelOf(request)
      return isFirstStep(request) ? { toolCalls: [delegate(`level ${level + 1}`)] } : { text: `answered at ${level}` }
    })
    r = await rig({ model })
    const root = r.ctx.agents.create({ label: 'root' })
    const result = await root.run('level 0')
    expect(result.stopReason).to.equal('completed')
    expect(r.starts.map((info) => info.depth)).to.deep.equal([1, 2, 3])
    const bottom = r.ends.find((end) => end.info.depth === 3)!
    expect(bottom.result.stopReason).to.equal('completed')
    // The depth-3 child's own tool result (seen by its model) named the ceiling.
    const seen = model.requests.filter((request) => levelOf(request) === 3 && !isFirstStep(request))
    const text = seen[0].messages.filter((m) => m.role === 'tool').map((m) => m.content).join('\n')
    expect(text).to.include('DEPTH_EXCEEDED').and.include('would have depth 4').and.include('maxDepth 3')
  })

  /** A 20×20×20 tree: every agent above depth 3 asks for 20 children in one step. */
  async function wideTree(subagents?: Partial<ServiceConfig>) {
    let inFlight = 0
    let maxInFlight = 0
    let maxLive = 0
    const model = new ScriptedModel(async (request) => {
      const level = levelOf(request)
      if (level > 0) {
        inFlight++
        maxInFlight = Math.max(maxInFlight, inFlight)
        maxLive = Math.max(maxLive, r!.ctx.subagents.runs().length)
      }
      try {
        await new Promise((resolve) => setTimeout(resolve, 2))
        if (isFirstStep(request) && level < 3) {
          return { toolCalls: Array.from({ length: 20 }, (_, i) => delegate(`level ${level + 1} part ${i}`)) }
        }
        return { text: `done at ${level}` }
      } finally {
        if (level > 0) inFlight--
      }
    })
    r = await rig({ model, subagents })
    const root = r.ctx.agents.create({ label: 'root' })
    const result = await root.run('level 0')
    expect(result.stopReason).to.equal('completed')
    const refusals = model.requests.flatMap((request) => request.messages)
      .filter((m) => m.role === 'tool' && m.content.includes('BUDGET_EXCEEDED'))
    expect(r.ctx.subagents.runs()).to.deep.equal([])
    return { result, refusals, maxInFlight, maxLive }
  }

  it('a 20×20×20 tree stops at the default maxChildren (16) with the limit named', async () => {
    const { result, refusals, maxLive } = await wideTree()
    expect(r!.starts).to.have.length(16)
    expect(result.work.own.delegations + result.work.delegated.delegations).to.equal(16)
    expect(refusals.length).to.be.greaterThan(0)
    expect(refusals[0].content).to.include('children budget (16 delegations; 16 spent)')
    expect(maxLive).to.be.at.most(16)
  })

  it('a 20×20×20 tree with maxChildren 64: stops at 64, never more than maxConcurrent (16) children working', async () => {
    const { result, refusals, maxInFlight, maxLive } = await wideTree({ maxChildren: 64 })
    expect(r!.starts).to.have.length(64)
    expect(result.work.own.delegations + result.work.delegated.delegations).to.equal(64)
    expect(refusals[0].content).to.include('children budget (64 delegations; 64 spent)')
    console.log(`      20×20×20: 64 started, at most ${maxInFlight} children in a model call at once, at most ${maxLive} live runs`)
    expect(maxInFlight).to.be.at.most(16)
    expect(maxInFlight).to.be.at.least(2)
    expect(maxLive).to.be.at.most(64)
  })

  it('siblings share their parent\'s budget: one\'s spend stops the other', async () => {
    let echoes = 0
    const model = new ScriptedModel(async (request) => {
      const level = levelOf(request)
      if (level === 0) return isFirstStep(request) ? { toolCalls: [delegate('level 1 a'), delegate('level 1 b')] } : { text: 'root done' }
      await new Promise((resolve) => setTimeout(resolve, 1))
      return { toolCalls: [{ name: 'echo', input: {} }] }
    })
    r = await rig({ model })
    const { z } = await import('zod')
    r.ctx.tools.register({ name: 'echo', description: 'echo', input: z.object({}), execute: async () => ({ content: `echo ${++echoes}` }) })
    const root = r.ctx.agents.create({ label: 'root', budget: { maxSteps: 12 } })
    const result = await root.run('level 0')
    expect(result.stopReason).to.equal('budget') // the root has no step left for its answer
    expect(root.budget.spent.steps).to.equal(12)
    const children = r.ends.map((end) => end.result)
    expect(children.map((c) => c.stopReason)).to.deep.equal(['budget', 'budget'])
    const steps = children.map((c) => c.work!.steps)
    expect(steps[0] + steps[1]).to.equal(11) // 12 less the root's first step
    expect(Math.min(...steps)).to.be.greaterThan(0)
    // Each child was carved 11 steps: neither spent its own; their sum spent the shared root's.
    expect(Math.max(...steps)).to.be.below(11)
  })

  it('timeout, cancel and budget end a delegation with three different stop reasons and texts', async () => {
    const hang = (request: GenerateRequest) => new Promise<ScriptedResponse>((_, reject) => {
      request.signal.addEventListener('abort', () => reject(request.signal.reason), { once: true })
    })
    const model = new ScriptedModel((request) => {
      const level = levelOf(request)
      if (level === 0) return isFirstStep(request) ? { toolCalls: [delegate('level 1')] } : { text: 'root done' }
      if (request.messages[0].content.includes('level 1') && budgetMode) return { toolCalls: [{ name: 'echo', input: {} }] }
      return hang(request)
    })
    let budgetMode = false

    // 1. The tool's timeout.
    r = await rig({ model, tool: { timeout: 50 } })
    const rootA = r.ctx.agents.create({ label: 'a' })
    await rootA.run('level 0')
    const timedOut = toolResults(rootA)[0]
    expect(timedOut).to.match(/^Subagent timed out after 50 ms and was cancelled\. Answer with what you have/)
    expect(r.ends.map((end) => end.result.stopReason)).to.deep.equal(['timeout'])
    await r.stop()

    // 2. A person's cancel (the parent's run aborted).
    r = await rig({ model })
    const rootB = r.ctx.agents.create({ label: 'b' })
    const controller = new AbortController()
    const events: AgentEvent[] = []
    const running = rootB.run('level 0', { signal: controller.signal, onEvent: (event) => events.push(event) })
    while (!r.starts.length) await new Promise((resolve) => setTimeout(resolve, 5))
    controller.abort('the user pressed Ctrl-C')
    const cancelled = await running
    expect(cancelled.stopReason).to.equal('aborted')
    while (!r.ends.length) await new Promise((resolve) => setTimeout(resolve, 5))
    expect(r.ends.map((end) => end.result.stopReason)).to.deep.equal(['aborted'])
    await r.stop()

    // 3. A budget of the tool load.
    budgetMode = true
    r = await rig({ model, tool: { budget: { maxSteps: 2 } } })
    const { z } = await import('zod')
    r.ctx.tools.register({ name: 'echo', description: 'echo', input: z.object({}), execute: () => ({ content: 'echo' }) })
    const rootC = r.ctx.agents.create({ label: 'c' })
    await rootC.run('level 0')
    const overBudget = toolResults(rootC)[0]
    expect(overBudget).to.include('Subagent stopped: the steps budget (2 model calls; 2 spent) ran out. Answer with what you have')
    expect(overBudget).to.include('No output was produced') // the child only called tools
    expect(r.ends.map((end) => end.result.stopReason)).to.deep.equal(['budget'])
    expect(r.ends[0].result.budget).to.deep.equal({ budget: 'steps', limit: 2, spent: 2 })
    expect(new Set([timedOut.split('\n')[0], overBudget.split('\n')[0]]).size).to.equal(2)
  })

  it('a timeout two levels up ends every run below it as `timeout` (the limit is passed down, not turned into a cancel)', async () => {
    const model = new ScriptedModel((request) => {
      const level = levelOf(request)
      if (level === 2) return new Promise<ScriptedResponse>(() => {}) // the grandchild hangs
      return isFirstStep(request) ? { toolCalls: [delegate(`level ${level + 1}`)] } : { text: `up from ${level}` }
    })
    r = await rig({ model, tool: { timeout: 200 } })
    await r.ctx.agents.create({ label: 'root' }).run('level 0')
    while (r.ends.length < 2) await new Promise((resolve) => setTimeout(resolve, 10))
    expect(r.ends.map((end) => `depth ${end.info.depth}: ${end.result.stopReason}`).sort())
      .to.deep.equal(['depth 1: timeout', 'depth 2: timeout'])
  })

  it('cancelling a 10,000-deep chain: the host survives, every run ends aborted, nothing is left live', async () => {
    const DEPTH = 10_000
    const bottom = deferred<void>()
    const model = new ScriptedModel((request) => {
      const level = levelOf(request)
      if (level === DEPTH) {
        bottom.resolve()
        return new Promise<ScriptedResponse>(() => {}) // hangs until the abort
      }
      return isFirstStep(request) ? { toolCalls: [delegate(`level ${level + 1}`)] } : { text: `up from ${level}` }
    })
    r = await rig({ model, subagents: { maxDepth: DEPTH, maxChildren: DEPTH } })
    const root = r.ctx.agents.create({ label: 'root' })
    const controller = new AbortController()
    const began = performance.now()
    const running = root.run('level 0', { signal: controller.signal })
    await bottom.promise
    const built = performance.now() - began
    // The last hand-over is a tick behind its first model call.
    while (r.starts.length < DEPTH) await new Promise((resolve) => setImmediate(resolve))
    expect(r.starts.map((info) => info.depth).slice(-2)).to.deep.equal([DEPTH - 1, DEPTH])
    const cancelAt = performance.now()
    controller.abort('cancel the whole tree')
    const result = await running
    const cancelled = performance.now() - cancelAt
    expect(result.stopReason).to.equal('aborted')
    while (r.ends.length < DEPTH) await new Promise((resolve) => setTimeout(resolve, 10))
    expect(r.ends.every((end) => end.result.stopReason === 'aborted')).to.equal(true)
    expect(r.ctx.subagents.runs()).to.deep.equal([])
    console.log(`      10,000-deep chain: built in ${built.toFixed(0)} ms, cancelled in ${cancelled.toFixed(0)} ms`)
  })

  it('ctx.stop() during a 1,000-wide tree: every call returns, every run ends, nothing is left live', async () => {
    const WIDTH = 1000
    const model = new ScriptedModel((request) => {
      const level = levelOf(request)
      if (level === 0) {
        return isFirstStep(request)
          ? { toolCalls: Array.from({ length: WIDTH }, (_, i) => delegate(`level 1 part ${i}`)) }
          : { text: 'root done' }
      }
      return new Promise<ScriptedResponse>(() => {}) // children work until stopped
    })
    r = await rig({
      model,
      agents: { maxToolCallsPerStep: WIDTH },
      subagents: { maxChildren: WIDTH, maxConcurrentPerParent: WIDTH, maxConcurrent: 64 },
    })
    const root = r.ctx.agents.create({ label: 'root' })
    const running = root.run('level 0')
    while (r.starts.length < 64) await new Promise((resolve) => setTimeout(resolve, 5))
    const service = r.ctx.get('subagents')!
    await r.stop()
    const result = await running
    expect(result.stopReason).to.equal('completed')
    const results = toolResults(root)
    expect(results).to.have.length(WIDTH)
    expect(results.every((text) => text.startsWith('Subagent') || text.startsWith('Could not start') || text.startsWith('Tool'))).to.equal(true)
    expect(r.ends).to.have.length(r.starts.length)
    expect(service.runs()).to.deep.equal([])
    await root.dispose()
  })
})
