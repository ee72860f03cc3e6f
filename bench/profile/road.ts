/**
 * The files of ours one synchronous spawn delegation calls into, from the parent model's tool call
 * to the tool result (issue 41), measured with V8's call counts rather than read by hand:
 *
 *   node --import tsx --conditions=cordis-subagents-source bench/profile/road.ts
 *
 * Prints each file with the functions that ran in it, by package, for one delegation after a
 * warm-up (the parent's turn that makes the call included: the child's turn runs the same files).
 */
import { Session } from 'node:inspector/promises'
import { withoutCallerTracing } from '@cordis-subagents/shared'
import { delegationModel, host } from '../lib.js'

const h = await host({ model: delegationModel('subagent') })
const agents = withoutCallerTracing(h.ctx.agents)
const once = async () => {
  const agent = agents.create({})
  const result = await agent.run('do the task')
  if (result.text !== 'parent final answer') throw new Error('wrong answer')
  await agent.dispose()
}
for (let i = 0; i < 20; i++) await once()

const session = new Session()
session.connect()
await session.post('Profiler.enable')
await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false })
await session.post('Profiler.takePreciseCoverage')
await once()
const { result } = await session.post('Profiler.takePreciseCoverage')
await session.post('Profiler.stopPreciseCoverage')
session.disconnect()
await h.stop()

const ours = /\/packages\/([^/]+)\/(?:src|lib)\/(.+)\.[jt]s$/
const byPackage = new Map<string, string[]>()
for (const script of result) {
  const match = ours.exec(script.url)
  if (!match) continue
  const ran = script.functions.filter((fn) => fn.ranges[0].count > 0 && fn.functionName).map((fn) => fn.functionName)
  if (!ran.length) continue
  const [, pkg, file] = match
  byPackage.set(pkg, [...byPackage.get(pkg) ?? [], `${file} (${[...new Set(ran)].slice(0, 6).join(', ')}${ran.length > 6 ? ', …' : ''})`])
}
let files = 0
for (const [pkg, list] of [...byPackage].sort()) {
  files += pkg === 'shared' ? 0 : list.length
  console.log(`${pkg} (${list.length})\n  ${list.sort().join('\n  ')}`)
}
console.log(`\n${files} files of ours outside shared`)
