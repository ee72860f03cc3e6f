/**
 * Fork growth for a model that does not read its messages (issue 42 item 4), not part of `npm run bench`
 * (section 8 there uses a model that reads every message, whose reading is O(history) by nature).
 * One conversation per rep and tool, every parent turn delegates once; prints µs per turn at turns
 * 1, 3, 100 and 1,000 (mean of `window` turns from each), and turn 1,000 ÷ turn 1 per rep (paired).
 *
 *   tsc -b && node --expose-gc --import tsx bench/profile/fork-growth.ts [reps] [read]
 *   node --expose-gc --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/profile/fork-growth.ts 5
 *
 * `read` as the second argument makes the model read every message (as section 8 does).
 */
import type { ChatModel, GenerateRequest, GenerateResponse } from '@cordis-subagents/agent'
import { withoutCallerTracing } from '@cordis-subagents/shared'
import { calls, CHILD, fmt, host, lastMessage, now, readMessages, stats, text } from '../lib.js'

const reps = Number(process.argv[2] ?? 7)
const reading = process.argv[3] === 'read'
const marks = [1, 3, 100, 1000]
const window = 10

/** The delegation workload (parent → child → parent) looking only at the last message, unless `reading`. */
function model(toolName: string): ChatModel {
  return {
    async generate(request: GenerateRequest): Promise<GenerateResponse> {
      if (reading) readMessages(request.messages)
      const last = lastMessage(request)
      if (last.role === 'tool') return text('parent final answer')
      if (last.content.startsWith(CHILD)) return text('child answer')
      return calls([{ name: toolName, input: { description: 'look something up', prompt: `${CHILD}look something up` } }])
    },
  }
}

const tools = { fork: 'subagent_fork', spawn: 'subagent' }
const hosts = await Promise.all(Object.values(tools).map((tool) => host({ model: model(tool) })))
const perMark: Record<string, Record<number, number[]>> = {}
const ratios: Record<string, number[]> = {}
const turns = Math.max(...marks) + window - 1
for (let rep = -1; rep < reps; rep++) {
  const order = Object.keys(tools).map((name, i) => [name, hosts[i]] as const)
  if (rep % 2) order.reverse()
  for (const [name, h] of order) {
    const agent = withoutCallerTracing(h.ctx.agents).create({})
    const times = new Float64Array(turns + 1)
    for (let turn = 1; turn <= turns; turn++) {
      const t0 = now()
      const result = await agent.run('do the task')
      times[turn] = now() - t0
      if (result.text !== 'parent final answer') throw new Error(`fork-growth ${name} turn ${turn}: ${JSON.stringify(result)}`)
    }
    await agent.dispose()
    if (rep < 0) continue
    const at = (mark: number) => {
      let sum = 0
      for (let turn = mark; turn < mark + window; turn++) sum += times[turn]
      return (sum / window) * 1000
    }
    for (const mark of marks) ((perMark[name] ??= {})[mark] ??= []).push(at(mark))
    ;(ratios[name] ??= []).push(at(1000) / at(name === 'fork' ? 1 : 3))
  }
}
for (const h of hosts) await h.stop()
console.log(`${reps} reps, ${reading ? 'a model that reads every message' : 'a model that reads only the last message'}`)
for (const [name, byMark] of Object.entries(perMark)) {
  const cells = marks.map((mark) => `turn ${mark}: ${fmt(stats(byMark[mark]).median)} µs`)
  const r = stats(ratios[name])
  console.log(`${name}: ${cells.join(', ')}; turn 1,000 ÷ turn ${name === 'fork' ? 1 : 3} per rep: median ${fmt(r.median, 2)}× (${fmt(r.min, 2)}–${fmt(r.max, 2)})`)
}
