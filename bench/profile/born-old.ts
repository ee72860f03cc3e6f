/**
 * Which of one delegation's objects are in the old generation when its parent's run ends (issue 42, not part of
 * `npm run bench`): made there from birth (V8 pretenures an object-literal site whose objects mostly outlived a young
 * collection) or shared and long-lived. A dead old object keeps the young objects it points at alive through every young
 * collection until the next full one (bench/README, "What survives a young collection"): a per-delegation object listed
 * here that points at the run's objects makes the young generation copy and promote the whole run.
 *
 *   node --import tsx bench/profile/born-old.ts [--runs N]
 *
 * Runs section 11's no-store delegation `N` times (default 20,000) after a warm-up of a tenth as many, and after each walks
 * the parent agent, the run (as `ctx.subagents` holds it at its start) and the parent's result, field by field (eight deep;
 * the runtime's shared objects and anything met in an earlier delegation skipped), and prints every path that was old
 * in more than half of the delegations.
 */
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { withoutCallerTracing } from '@cordis-subagents/shared'
import type { Agent } from '@cordis-subagents/agent'
import { system } from '../scenarios/checkpoints.js'

const args = process.argv.slice(2)
const runs = Number(args[args.indexOf('--runs') + 1] ?? 20_000)
if (args.includes('--runs') && (!Number.isInteger(runs) || runs < 100)) throw new Error('--runs takes a whole number of at least 100')

if (!process.env.BORN_OLD_CHILD) {
  // The probe is V8's own `%InYoungGeneration`: natives syntax in a child process of its own.
  const child = spawnSync(process.execPath, ['--allow-natives-syntax', '--import', 'tsx', fileURLToPath(import.meta.url), ...args], {
    env: { ...process.env, BORN_OLD_CHILD: '1' }, stdio: 'inherit',
  })
  process.exit(child.status ?? 1)
}

const inYoungGeneration = new Function('value', 'return %InYoungGeneration(value)') as (value: unknown) => boolean
/** Objects of the runtime, the registry and the host: long-lived by design, not the delegation's. */
const SHARED = new Set(['host', 'ctx', 'owner', 'runtime', 'seam', 'provider', 'tools', 'again', 'gate', 'model', 'hooks', 'observers',
  'registry', 'view', 'log', 'logger', 'events'])
const DEPTH = 8
const tally = new Map<string, number>()
/** Objects met in an earlier delegation: shared (a frozen constant, a no-op), not this delegation's. */
const earlier = new WeakSet<object>()

function walk(path: string, value: unknown, depth: number, seen: Set<unknown>): void {
  if (!value || (typeof value !== 'object' && typeof value !== 'function') || seen.has(value) || depth > DEPTH) return
  seen.add(value)
  if (earlier.has(value)) return
  earlier.add(value)
  if (!inYoungGeneration(value)) tally.set(path, (tally.get(path) ?? 0) + 1)
  if (typeof value === 'function') return
  if (value instanceof Map || value instanceof Set) {
    let index = 0
    for (const item of value.values()) if (index++ < 5) walk(`${path}<item>`, item, depth + 1, seen)
    return
  }
  for (const key of Reflect.ownKeys(value)) {
    if (typeof key === 'string' && SHARED.has(key)) continue
    let field: unknown
    try {
      field = (value as Record<string | symbol, unknown>)[key]
    } catch {
      continue
    }
    walk(`${path}.${String(key)}`, field, depth + 1, seen)
  }
}

const s = await system('none', { stores: [], storedRuns: 0, rounds: 1, batch: 100, warmup: 0 })
const agents = withoutCallerTracing(s.host.ctx.agents) as { create(options: object): Agent }
const service = withoutCallerTracing(s.host.ctx.subagents) as unknown as { live: Map<string, unknown> }
let measuring = false
let run: unknown
s.host.ctx.subagents.observe({ 'subagent/start': (info) => { if (measuring) run = service.live.get(info.runId) } })
const once = async () => {
  const parent = agents.create({})
  const result = await parent.run('do the task')
  if (measuring) {
    const seen = new Set<unknown>()
    walk('parent', parent, 0, seen)
    walk('run', run, 0, seen)
    walk('result', result, 0, seen)
  }
  await parent.dispose()
}
const turn = () => new Promise((resolve) => setImmediate(resolve))
for (let i = 0; i < runs / 10; i++) if ((await once(), i % 100 === 99)) await turn()
measuring = true
for (let i = 0; i < runs; i++) if ((await once(), i % 100 === 99)) await turn()
const listed = [...tally].filter(([, count]) => count > runs / 2).sort(([a], [b]) => a.localeCompare(b))
console.log(`old when the parent's run ended, in more than half of ${runs} delegations (${listed.length} paths):`)
for (const [path, count] of listed) console.log(`${String(count).padStart(7)}  ${path}`)
await s.host.stop()
process.exit(0)
