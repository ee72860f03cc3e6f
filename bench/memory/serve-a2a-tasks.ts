// Memory of the A2A server over many tasks (issue 25: "memory stays flat over 10,000 tasks").
// One fresh process: a real serve-a2a on 127.0.0.1 (store cap 500, the default), the real 1.x
// client sending tasks 8 at a time; after every 2,000 tasks, a full GC and the heap in use.
// Run: node --expose-gc --import tsx --conditions=cordis-subagents-source bench/memory/serve-a2a-tasks.ts [tasks]
import { ScriptedModel } from '@cordis-subagents/agent'
import { bearer, client10, message10, serve } from '../../packages/serve-a2a/tests/helpers.js'

const total = Number(process.argv[2] ?? 10_000)
const gc = (globalThis as { gc?: () => void }).gc
if (!gc) throw new Error('run with --expose-gc')
const served = await serve({ rateLimit: 1_000_000, maxConcurrentTasks: 8 }, () => ScriptedModel.text('x'.repeat(2_000)))
const client = await client10(served.server.url, bearer(served.server.token))
const mib = (bytes: number) => (bytes / 1048576).toFixed(1)
const heap = () => {
  gc()
  return process.memoryUsage().heapUsed
}
const rows: string[] = []
let base = 0
for (let sent = 0; sent < total;) {
  await Promise.all(Array.from({ length: 8 }, (_, i) => client.sendMessage(message10(`task ${sent + i}`) as never)))
  sent += 8
  // The fixture's ScriptedModel records every request; that is the test's memory, not the server's.
  served.model.requests.length = 0
  if (sent % 2_000 === 0) {
    const used = heap()
    if (!base) base = used
    rows.push(`${sent} tasks: heap ${mib(used)} MiB (${used >= base ? '+' : ''}${mib(used - base)} since 2,000), stored ${served.server.storedTasks}`)
    console.log(rows.at(-1))
  }
}
await served.ctx.stop()
