// Ad-hoc: µs per delegation through subagent → spawn (used while optimising the hot path).
import { Logger } from 'cordis'
import { untraced } from '@cordis-subagents/agent'
import { delegationModel, host } from './lib.js'
Logger.levels.base = 1
const h = await host({ model: delegationModel('subagent') })
const agents = untraced(h.ctx.agents)
const once = async () => {
  const agent = agents.create({})
  const r = await agent.run('do the task')
  if (r.text !== 'parent final answer') throw new Error(JSON.stringify(r))
  await agent.dispose()
}
for (let i = 0; i < 300; i++) await once()
const samples: number[] = []
for (let round = 0; round < 7; round++) {
  const t = performance.now()
  for (let i = 0; i < 200; i++) await once()
  samples.push((performance.now() - t) * 1000 / 200)
}
samples.sort((a, b) => a - b)
console.log('µs/delegation median', samples[3].toFixed(0), 'min', samples[0].toFixed(0), 'max', samples[6].toFixed(0))
await h.stop()
