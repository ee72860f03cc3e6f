import { withoutCallerTracing } from '@cordis-subagents/shared'
import { Budget, type AgentRuntime } from '@cordis-subagents/agent'
import { BenchModel, calls, CHILD, delegationModel, gc, host, interleave, lastMessage, now, stats, text, type Stats } from '../lib.js'

/**
 * What the tree limits cost: the budget bookkeeping of one step, a delegation with a tool-load
 * budget enforced vs the shipped defaults only, refusing a 5,000-wide step, and cancelling a
 * 10,000-deep chain.
 */
export interface LimitsResult {
  /** ns of budget bookkeeping per step (checks + charges a step does), at depth 3 with limits at every level. */
  stepNs: Stats
  overhead: Record<string, Stats>
  wide: { ms: number[]; heapMiB: number[]; ran: number; refused: number }
  deep: { depth: number; buildMs: number[]; cancelMs: number[] }
}

/** One model step's bookkeeping, as the loop does it: wall, steps, tokens, then one tool call. */
function stepBookkeeping(budget: Budget) {
  if (budget.overtime() ?? budget.check('steps') ?? budget.check('tokens')) throw new Error('budget hit in the bench')
  budget.charge('steps', 1)
  budget.charge('tokens', 15)
  if (budget.check('toolCalls')) throw new Error('budget hit in the bench')
  budget.charge('toolCalls', 1)
}

function measureStep(rounds: number, iterations: number): Stats {
  const samples: number[] = []
  for (let round = 0; round < rounds; round++) {
    const huge = 1e15
    const root = Budget.root({ maxSteps: huge, maxTokens: huge, maxToolCalls: huge, maxWallMs: 1e12 })
    const leaf = root.child({ maxSteps: huge - 1 }).child({ maxTokens: huge - 1 }).child({ maxToolCalls: huge - 1 })
    const t0 = now()
    for (let i = 0; i < iterations; i++) stepBookkeeping(leaf)
    samples.push(((now() - t0) * 1e6) / iterations)
  }
  return stats(samples)
}

async function overheadWithBudgets(options: { rounds: number; batch: number; warmup: number }) {
  const plain = await host({ model: delegationModel('subagent') })
  const budgeted = await host({
    model: delegationModel('subagent'),
    agents: { budget: { maxSteps: 1e9, maxTokens: 1e12, maxToolCalls: 1e9, maxWallMs: 3_600_000 } },
    tool: { budget: { maxSteps: 1e6, maxTokens: 1e9, maxToolCalls: 1e6, maxWallMs: 600_000 } },
  })
  const system = (agents: AgentRuntime) => async () => {
    const agent = agents.create({})
    const result = await agent.run('do the task')
    if (result.text !== 'parent final answer') throw new Error(`limits bench: ${JSON.stringify(result)}`)
    await agent.dispose()
  }
  try {
    return await interleave({
      'subagent → spawn, shipped defaults': system(withoutCallerTracing(plain.ctx.agents)),
      'subagent → spawn, root + tool-load budgets on every limit': system(withoutCallerTracing(budgeted.ctx.agents)),
    }, options)
  } finally {
    await plain.stop()
    await budgeted.stop()
  }
}

async function wideStep(reps: number, width: number) {
  const ms: number[] = []
  const heapMiB: number[] = []
  let ran = 0
  let refused = 0
  const model = new BenchModel((request) => {
    const last = lastMessage(request)
    // After the results the parent's last message is the note on the calls cut past maxToolCallsPerStep.
    if (last.role === 'tool' || request.messages.some((m) => m.role === 'tool')) return text('parent final answer')
    if (last.content.startsWith(CHILD)) return text('child answer')
    return calls(Array.from({ length: width }, (_, i) => ({ name: 'subagent', input: { description: `part ${i}`, prompt: `${CHILD}part ${i}` } })))
  })
  const h = await host({ model })
  try {
    const agents = withoutCallerTracing(h.ctx.agents)
    for (let rep = 0; rep < reps; rep++) {
      gc()
      const before = process.memoryUsage().heapUsed
      const t0 = now()
      const agent = agents.create({})
      const result = await agent.run('do the task')
      ms.push(now() - t0)
      heapMiB.push((process.memoryUsage().heapUsed - before) / 1048576)
      if (result.text !== 'parent final answer') throw new Error(`wide step: ${JSON.stringify(result.stopReason)}`)
      const results = agent.transcript.messages.filter((m) => m.role === 'tool')
      ran = result.toolCalls
      refused = results.filter((m) => (m as { isError?: boolean }).isError).length
      await agent.dispose()
    }
  } finally {
    await h.stop()
  }
  return { ms, heapMiB, ran, refused }
}

async function deepCancel(reps: number, depth: number) {
  const buildMs: number[] = []
  const cancelMs: number[] = []
  for (let rep = 0; rep < reps; rep++) {
    let reachedBottom!: () => void
    const bottom = new Promise<void>((resolve) => { reachedBottom = resolve })
    const model = new BenchModel((request) => {
      const first = request.messages[0].content
      const level = first.startsWith(CHILD) ? Number(first.slice(CHILD.length)) : 0
      if (level === depth) {
        reachedBottom()
        return new Promise((_, reject) => request.signal.addEventListener('abort', () => reject(request.signal.reason), { once: true }))
      }
      if (lastMessage(request).role === 'tool') return text(`up from ${level}`)
      return calls([{ name: 'subagent', input: { description: 'deeper', prompt: `${CHILD}${level + 1}` } }])
    })
    const h = await host({ model, width: depth, subagents: { maxDepth: depth }, tool: { nested: true } })
    try {
      const controller = new AbortController()
      const t0 = now()
      const running = withoutCallerTracing(h.ctx.agents).create({}).run('go', { signal: controller.signal })
      await bottom
      buildMs.push(now() - t0)
      const t1 = now()
      controller.abort('bench cancel')
      const result = await running
      cancelMs.push(now() - t1)
      if (result.stopReason !== 'aborted') throw new Error(`deep cancel: ${result.stopReason}`)
    } finally {
      await h.stop()
    }
  }
  return { depth, buildMs, cancelMs }
}

export async function limits(options: {
  stepRounds: number; stepIterations: number; rounds: number; batch: number; warmup: number
  wideReps: number; deepReps: number; deepDepth: number
}): Promise<LimitsResult> {
  const stepNs = measureStep(options.stepRounds, options.stepIterations)
  const overhead = await overheadWithBudgets(options)
  const wide = await wideStep(options.wideReps, 5000)
  const deep = await deepCancel(options.deepReps, options.deepDepth)
  return { stepNs, overhead, wide, deep }
}
