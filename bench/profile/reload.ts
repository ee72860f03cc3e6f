/**
 * Provider reload (section 4 of `npm run bench`) for a profile, not part of `npm run bench`: the spawn
 * provider reloaded (`fork.update` with a changed config) while a `subagent` tool is bound to it,
 * `cycles` times in a row, then the same count of cordis' own reload of a plugin that does nothing.
 *
 *   node --expose-gc --import tsx bench/profile/reload.ts [cycles]
 *   node --expose-gc --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/profile/reload.ts 20000 provider
 *
 * With `provider` as the second argument only the provider's reloads run (a profile of them alone).
 */
import { Logger } from 'cordis'
import { reloadRig } from '../scenarios/churn.js'

Logger.levels.base = 1
const cycles = Number(process.argv[2] ?? 10_000)
const only = process.argv[3] === 'provider'
const { h, cycle: provider, bareCycle: plugin } = await reloadRig()
const timed = (run: () => void) => {
  const t0 = performance.now()
  for (let i = 0; i < cycles; i++) run()
  return ((performance.now() - t0) * 1000) / cycles
}
for (let i = 0; i < 500; i++) {
  provider()
  plugin()
}
const ours = timed(provider)
const own = only ? NaN : timed(plugin)
console.log(`${cycles} reloads: provider with a mounted tool ${ours.toFixed(1)} µs, cordis' own reload of an empty plugin ${only ? '(not run)' : `${own.toFixed(1)} µs (${(ours / own).toFixed(2)}×)`}`)
await h.stop()
