import * as SubagentControl from '@cordis-subagents/subagent-tool/control'
import { withoutCallerTracing } from '@cordis-subagents/shared'
import type { RunResult } from '@cordis-subagents/agent'
import { BenchModel, calls, CHILD, delegationModel, host, interleave, lastMessage, SubagentTool, text, type Stats } from '../lib.js'

const TASK = { description: 'look something up', prompt: `${CHILD}look something up` }
const MARK = '[Background subagent '

/**
 * Background start + collect through `subagent_wait`: parent starts (subagent_bg), parent waits
 * (subagent_wait), parent answers; the child does one step. A child that ends before the wait
 * arrives is delivered as a message instead (the wait then says so): both count, and are counted.
 */
export function waitModel(): BenchModel {
  return new BenchModel((request) => {
    const last = lastMessage(request)
    if (last.role === 'user' && last.content.startsWith(CHILD)) return text('child answer')
    if (last.role === 'tool' && last.name === 'subagent_bg') return calls([{ name: 'subagent_wait', input: {} }])
    if (last.role === 'tool' && last.name === 'subagent_wait') return text('parent final answer')
    if (last.role === 'user' && last.content.startsWith(MARK)) return text('parent final answer')
    return calls([{ name: 'subagent_bg', input: TASK }])
  })
}

/** Background start + delivery as a message: parent starts, answers (its turn waits), reads the result, answers. */
function messageModel(): BenchModel {
  return new BenchModel((request) => {
    const last = lastMessage(request)
    if (last.role === 'user' && last.content.startsWith(CHILD)) return text('child answer')
    if (last.role === 'tool' && last.name === 'subagent_bg') return text('started; I will wait')
    if (last.role === 'user' && last.content.startsWith(MARK)) return text('parent final answer')
    return calls([{ name: 'subagent_bg', input: TASK }])
  })
}

/** A host whose `subagent_bg` tool delegates in the background, with the control verbs (`subagent_wait` …) loaded. */
export async function backgroundHost(model: BenchModel): ReturnType<typeof host> {
  const h = await host({ model })
  h.ctx.plugin(SubagentTool, { provider: 'spawn', toolName: 'subagent_bg', mode: 'background' })
  h.ctx.plugin(SubagentControl, {})
  await h.ctx.lifecycle.flush()
  return h
}

export interface BackgroundResultRow {
  stats: Record<string, Stats>
  rounds: number
  batch: number
  /** Of the wait runs: results collected by the wait vs. already delivered as a message when the wait came. */
  collectedByWait: number
  deliveredAsMessage: number
}

export async function background(options: { rounds: number; batch: number; warmup: number }): Promise<BackgroundResultRow> {
  const sync = await host({ model: delegationModel('subagent') })
  const byWait = await backgroundHost(waitModel())
  const byMessage = await backgroundHost(messageModel())
  let collectedByWait = 0
  let deliveredAsMessage = 0
  const run = (ctx: typeof sync.ctx, check: (result: RunResult) => void) => {
    const agents = withoutCallerTracing(ctx.agents)
    return async () => {
      const agent = agents.create({})
      const result = await agent.run('do the task')
      if (result.text !== 'parent final answer') throw new Error(`background bench: ${JSON.stringify(result)}`)
      check(result)
      await agent.dispose()
    }
  }
  try {
    const stats = await interleave({
      'sync: subagent → spawn (3 model calls)': run(sync.ctx, () => {}),
      'background: start + subagent_wait (4 model calls)': run(byWait.ctx, (result) => {
        if (result.steps === 3) collectedByWait++
        else deliveredAsMessage++
      }),
      'background: start + result as a message (4 model calls)': run(byMessage.ctx, (result) => {
        if (result.steps !== 3) throw new Error(`message path took ${result.steps} parent steps`)
      }),
    }, options)
    for (const h of [sync, byWait, byMessage]) {
      if (h.ctx.subagents.runs().length || h.ctx.subagents.background.live.size) throw new Error('background bench: live runs left')
    }
    return { stats, rounds: options.rounds, batch: options.batch, collectedByWait, deliveredAsMessage }
  } finally {
    for (const h of [sync, byWait, byMessage]) await h.stop()
  }
}
