/**
 * The cost of keeping one run's result (`ResultBook.record`, the `subagent/end` listener every delegation runs) once
 * the book is full, at several caps (issue 42), not part of `npm run bench`: the book must forget its oldest entry
 * for every new one, which stays O(1) whatever the cap.
 *
 *   npx tsc -b && node --import tsx bench/profile/result-book.ts [records]
 */
import { ResultBook, type SubagentOutcome, type SubagentRunInfo } from '@cordis-subagents/subagents-service'

const records = Number(process.argv[2] ?? 400_000)
const outcome: SubagentOutcome = { stopReason: 'completed', status: 'done', output: 'child answer', work: { steps: 1, toolCalls: 0, delegations: 0 }, durationMs: 1 }
for (const maxResults of [256, 4096, 65_536]) {
  const book = new ResultBook({ maxResults, maxBytes: 1e9 })
  const infos: SubagentRunInfo[] = Array.from({ length: records }, (_, i) => ({ runId: `run-${i}`, provider: 'spawn', parentId: 'agent-1', depth: 1, startedAt: 0 }))
  // Filled first: every record measured forgets one.
  for (let i = 0; i < maxResults; i++) book.record({ ...infos[0], runId: `fill-${i}` }, outcome)
  const times: number[] = []
  for (let pass = 0; pass < 3; pass++) {
    const started = process.hrtime.bigint()
    for (let i = pass * (records / 3) | 0, end = (pass + 1) * (records / 3) | 0; i < end; i++) book.record(infos[i], outcome)
    times.push(Number(process.hrtime.bigint() - started) / (records / 3) / 1000)
  }
  console.log(`maxResults ${maxResults}: ${times.map((t) => t.toFixed(2)).join(' / ')} µs a record (three passes, GC included)`)
}
