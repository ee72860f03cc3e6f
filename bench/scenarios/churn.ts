import { BenchModel, host, ProviderSpawn, stats, text, type Stats } from '../lib.js'

export interface ChurnResult {
  cycles: number
  /** µs per provider reload, one sample per chunk. */
  samples: number[]
  /** µs per reload of a plugin that does nothing (cordis' own restart cost), one sample per chunk. */
  baseline: number[]
  /** µs per reload of a plugin that does nothing but declare the provider's `reusable` and `inject`, one sample per chunk. */
  injecting: number[]
  provider: Stats
  plugin: Stats
  injectingPlugin: Stats
  mountedAtEnd: boolean
}

/** A plugin with a config and nothing else: what cordis' own reload (`fork.update` → dispose → apply) costs. */
let bareApplied = 0
const Bare = { name: 'bare', apply: () => { bareApplied++ } }
/**
 * A plugin that does nothing but declare what the provider declares (`reusable`, `inject: ['subagents',
 * 'agents']`): cordis' own reload of it adds the readiness check of each inject, the part of a
 * provider's reload that is cordis' whatever the provider does.
 */
let injectingApplied = 0
const BareInjecting = { name: 'bare-injecting', reusable: true, inject: ['subagents', 'agents'], apply: () => { injectingApplied++ } }

/**
 * The reload rig: a host with a `subagent` tool bound to the spawn provider `churn`, and a bare
 * plugin. `cycle` reloads the provider (fork.update with a changed config: dispose → apply; the tool
 * is removed, re-added and remounted); `bareCycle` is cordis' own reload of a plugin that does nothing.
 */
export async function reloadRig() {
  const h = await host({ model: new BenchModel(() => text('unused')), tools: false })
  const { ctx } = h
  ctx.plugin((await import('@cordis-subagents/subagent-tool')), { provider: 'churn', toolName: 'subagent' })
  const fork = ctx.plugin(ProviderSpawn, { name: 'churn', maxSteps: 10 })
  const bare = ctx.plugin(Bare, { n: 0 })
  const injecting = ctx.plugin(BareInjecting, { n: 0 })
  await ctx.lifecycle.flush()
  const view = ctx.tools.view()
  if (!view.has('subagent')) throw new Error('churn: tool not mounted')
  let step = 0
  const cycle = () => {
    fork.update({ name: 'churn', maxSteps: 10 + (++step % 2) })
    if (!view.has('subagent')) throw new Error(`churn: tool not remounted synchronously after cycle ${step}`)
  }
  let n = 0
  const bareCycle = () => bare.update({ n: ++n % 2 })
  let m = 0
  const injectingCycle = () => injecting.update({ n: ++m % 2 })
  return { h, ctx, view, cycle, bareCycle, injectingCycle }
}

/**
 * Reloads the spawn provider plugin (fork.update with a changed config: dispose → apply) while a
 * `subagent` tool is bound to it; each cycle is remove → re-add → remount of the tool. Chunks of
 * provider reloads alternate with chunks of the two bare plugins' reloads in the same app, so the
 * ratios compare with cordis' own reload on the same heap.
 */
export async function churn(options: { cycles: number; warmup: number; chunks: number }): Promise<ChurnResult> {
  const { h, ctx, view, cycle, bareCycle, injectingCycle } = await reloadRig()
  const timed = (run: () => void, count: number) => {
    const t0 = performance.now()
    for (let i = 0; i < count; i++) run()
    return ((performance.now() - t0) * 1000) / count
  }
  try {
    for (let i = 0; i < options.warmup; i++) {
      cycle()
      bareCycle()
      injectingCycle()
    }
    const per = Math.floor(options.cycles / options.chunks)
    const samples: number[] = []
    const baseline: number[] = []
    const injecting: number[] = []
    const kinds = [
      () => samples.push(timed(cycle, per)),
      () => baseline.push(timed(bareCycle, per)),
      () => injecting.push(timed(injectingCycle, per)),
    ]
    for (let c = 0; c < options.chunks; c++) {
      // Rotate which goes first, so none always runs on the heap another just left.
      for (let k = 0; k < kinds.length; k++) kinds[(c + k) % kinds.length]()
    }
    await ctx.lifecycle.flush()
    // Each bare cycle must be a real reload (dispose → apply), or the baseline measures nothing.
    const applied = per * options.chunks + options.warmup
    if (bareApplied < applied || injectingApplied < applied) throw new Error(`churn: the bare plugins were applied ${bareApplied} and ${injectingApplied} times`)
    return {
      cycles: per * options.chunks, samples, baseline, injecting,
      provider: stats(samples), plugin: stats(baseline), injectingPlugin: stats(injecting),
      mountedAtEnd: view.has('subagent') && !!ctx.subagents.get('churn'),
    }
  } finally {
    await h.stop()
  }
}
