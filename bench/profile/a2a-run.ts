/**
 * A2A per-run (section 6's "A2A per-run ≤ 1.5× the hand-written SDK client") for a profile, not part of
 * `npm run bench`: the same SDK server on loopback (streaming, one text artifact), then `runs` delegations
 * through provider-a2a and `runs` SendStreamingMessage calls of a hand-written SDK client, alternating in
 * blocks of 50, printing the mean wall time of each and the TCP connections the server accepted for each side.
 * Server, client and provider share the process, as in
 * the section, so a CPU profile holds all three; `summarize.ts --by-caller "node (internal)"` splits what
 * Node does by our nearest caller.
 *
 *   npx tsc -b && node --import tsx bench/profile/a2a-run.ts [runs]
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof-a2a --import tsx bench/profile/a2a-run.ts 1000
 */
import { ClientFactory } from '@a2a-js/sdk/client'
import * as ProviderA2a from '@cordis-subagents/provider-a2a'
import { withoutCallerTracing } from '@cordis-subagents/shared'
import { bareA2aServer } from '../scenarios/a2a-bare.js'
import { handA2aRun } from '../scenarios/a2a.js'
import { BenchModel, host, text } from '../lib.js'

const runs = Number(process.argv[2] ?? 1000)
const remote = await bareA2aServer({ name: 'bench agent', streaming: true, answer: async () => 'child answer' })
const h = await host({ model: new BenchModel(() => text('child answer')), tools: false })
h.ctx.plugin(ProviderA2a, { name: 'a2a', url: remote.url })
await h.ctx.lifecycle.flush()
const agents = withoutCallerTracing(h.ctx.agents)
const subagents = withoutCallerTracing(h.ctx.subagents)
const client = await new ClientFactory().createFromUrl(remote.url)

const ours = async () => {
  const parent = agents.create({})
  const run = await subagents.delegate('a2a', { prompt: 'hello', parent, signal: new AbortController().signal })
  const result = await run.result
  await run.dispose()
  await parent.dispose()
  if (result.output !== 'child answer') throw new Error(`ours: ${JSON.stringify(result)}`)
}
const hand = () => handA2aRun(client)

const total = { ours: 0, hand: 0 }
const connections = { ours: 0, hand: 0 }
const block = async (name: 'ours' | 'hand', count: number) => {
  const t0 = performance.now()
  const accepted = remote.connections
  for (let i = 0; i < count; i++) await (name === 'ours' ? ours() : hand())
  total[name] += performance.now() - t0
  connections[name] += remote.connections - accepted
}
for (let i = 0; i < 100; i++) { await ours(); await hand() }
for (let done = 0; done < runs; done += 50) {
  const count = Math.min(50, runs - done)
  if ((done / 50) % 2) { await block('hand', count); await block('ours', count) } else { await block('ours', count); await block('hand', count) }
}
console.log(`${runs} runs each: ours ${(total.ours / runs).toFixed(2)} ms, hand client ${(total.hand / runs).toFixed(2)} ms per run (${(total.ours / total.hand).toFixed(2)}×); `
  + `TCP connections the server accepted: ours ${connections.ours}, hand client ${connections.hand}`)
await h.stop()
await remote.close()
