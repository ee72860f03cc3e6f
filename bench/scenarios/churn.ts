import { BenchModel, host, ProviderSpawn, text } from '../lib.js'

export interface ChurnResult { cycles: number; usPerCycle: number; samples: number[]; mountedAtEnd: boolean }

/**
 * Reloads the spawn provider plugin (fork.update with a changed config: dispose → apply) while a
 * `subagent` tool is bound to it; each cycle is remove → re-add → remount of the tool.
 */
export async function churn(options: { cycles: number; warmup: number; chunks: number }): Promise<ChurnResult> {
  const h = await host({ model: new BenchModel(() => text('unused')), tools: false })
  const { ctx } = h
  ctx.plugin((await import('@cordis-subagents/subagent-tool')), { provider: 'churn', toolName: 'subagent' })
  const fork = ctx.plugin(ProviderSpawn, { name: 'churn', maxSteps: 10 })
  await ctx.lifecycle.flush()
  const view = ctx.tools.view()
  if (!view.has('subagent')) throw new Error('churn: tool not mounted')
  let step = 0
  const cycle = () => {
    fork.update({ name: 'churn', maxSteps: 10 + (++step % 2) })
    if (!view.has('subagent')) throw new Error(`churn: tool not remounted synchronously after cycle ${step}`)
  }
  try {
    for (let i = 0; i < options.warmup; i++) cycle()
    const per = Math.floor(options.cycles / options.chunks)
    const samples: number[] = []
    for (let c = 0; c < options.chunks; c++) {
      const t0 = performance.now()
      for (let i = 0; i < per; i++) cycle()
      samples.push(((performance.now() - t0) * 1000) / per)
    }
    await ctx.lifecycle.flush()
    return { cycles: per * options.chunks, usPerCycle: 0, samples, mountedAtEnd: view.has('subagent') && !!ctx.subagents.get('churn') }
  } finally {
    await h.stop()
  }
}
