import { withoutCallerTracing } from '@cordis-subagents/shared'
import type { AgentRuntime } from '@cordis-subagents/agent'
import { delegationModel, host, now, readMessages, stats, type Stats } from '../lib.js'

/** The row of a fork conversation whose model does not read its messages. */
export const NOT_READING = 'fork, model does not read'

export interface GrowthResult {
  /** Turns timed at each mark: the mark and the `window - 1` turns after it. */
  window: number
  turns: number
  reps: number
  /** µs per parent turn (one delegation each) around each mark, per row (fork, spawn, NOT_READING); one sample per rep, in rep order. */
  marks: Record<string, Record<number, Stats>>
  /** Transcript length of the parent when each mark's window starts. */
  messagesAt: Record<number, number>
  /** ms for the first `turns` turns of a conversation, per tool. */
  totalMs: Record<string, Stats>
  /**
   * µs the model's own reading costs per turn at each mark, apart: three `readMessages` over a plain
   * array of the parent's messages at that mark, in a bare loop (the part of a turn no framework can remove).
   */
  readingUs: Record<number, Stats>
}

/**
 * One long conversation per rep: every parent turn delegates once (parent step → child step →
 * parent step), so the parent's transcript grows by 4 messages a turn. Each turn is timed; a mark's
 * figure is the mean of the `window` turns from that mark, medianed over reps. With `subagent_fork`
 * every child starts from the parent's whole completed history, so this is fork seeding cost as the
 * history grows; with `subagent` (spawn) it is the parent's own per-turn cost as its transcript grows.
 */
export async function growth(options: { marks: number[]; window: number; reps: number }): Promise<GrowthResult> {
  const turns = Math.max(...options.marks) + options.window - 1
  // `fork, model does not read`: the same fork conversation with a model that reads only the last
  // message, so its figures are the framework's own cost as history grows (issue 42's target).
  const tools = { fork: 'subagent_fork', spawn: 'subagent', [NOT_READING]: 'subagent_fork' }
  const marks: Record<string, Record<number, number[]>> = {}
  const totals: Record<string, number[]> = {}
  const messagesAt: Record<number, number> = {}
  const reading: Record<number, number[]> = {}
  const hosts = await Promise.all(Object.entries(tools)
    .map(([name, tool]) => host({ model: delegationModel(tool, { reads: name !== NOT_READING }) })))
  try {
    for (let rep = -1; rep < options.reps; rep++) {
      // Alternate which tool goes first, so neither always runs on a heap the other just grew.
      const order = Object.entries(tools).map(([name], i) => [name, hosts[i]] as const)
      if (rep % 2) order.reverse()
      for (const [name, h] of order) {
        const agents: AgentRuntime = withoutCallerTracing(h.ctx.agents)
        const agent = agents.create({})
        const times = new Float64Array(turns + 1)
        const lengths = new Int32Array(turns + 1)
        for (let turn = 1; turn <= turns; turn++) {
          lengths[turn] = agent.transcript.length
          const t0 = now()
          const result = await agent.run('do the task')
          times[turn] = now() - t0
          if (result.text !== 'parent final answer' || result.toolCalls !== 1) throw new Error(`growth ${name} turn ${turn}: ${JSON.stringify(result)}`)
        }
        const history = agent.transcript.messages
        await agent.dispose()
        if (rep < 0) continue
        if (name === 'fork') {
          for (const mark of options.marks) {
            const at = history.slice(0, lengths[mark])
            const t0 = now()
            for (let i = 0; i < 20; i++) for (let call = 0; call < 3; call++) readMessages(at)
            ;(reading[mark] ??= []).push(((now() - t0) * 1000) / 20)
          }
        }
        let total = 0
        for (let turn = 1; turn <= Math.max(...options.marks); turn++) total += times[turn]
        ;(totals[name] ??= []).push(total)
        for (const mark of options.marks) {
          let sum = 0
          for (let turn = mark; turn < mark + options.window; turn++) sum += times[turn]
          ;((marks[name] ??= {})[mark] ??= []).push((sum / options.window) * 1000)
          messagesAt[mark] = lengths[mark]
        }
      }
    }
    for (const h of hosts) if (h.ctx.subagents.runs().length) throw new Error('growth: live runs left')
  } finally {
    for (const h of hosts) await h.stop()
  }
  return {
    window: options.window,
    turns: Math.max(...options.marks),
    reps: options.reps,
    marks: Object.fromEntries(Object.entries(marks).map(([name, byMark]) => [name,
      Object.fromEntries(Object.entries(byMark).map(([mark, samples]) => [mark, stats(samples)]))])),
    messagesAt,
    totalMs: Object.fromEntries(Object.entries(totals).map(([name, samples]) => [name, stats(samples)])),
    readingUs: Object.fromEntries(Object.entries(reading).map(([mark, samples]) => [mark, stats(samples)])),
  }
}
