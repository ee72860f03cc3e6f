import { BenchModel, calls, CHILD, gc, host, lastMessage, listenerCount, text } from '../lib.js'

export interface SoakResult {
  delegations: number; aborted: number; heapStartMiB: number; heapEndMiB: number; growthKiB: number
  liveRuns: number; listenersStart: number; listenersEnd: number; handlesStart: number; handlesEnd: number; seconds: number
}

/** 10,000 sequential delegations; every 10th is aborted while its child is in its model call. */
export async function soak(options: { delegations: number; warmup: number }): Promise<SoakResult> {
  let controller = new AbortController()
  const model = new BenchModel((request) => {
    const last = lastMessage(request)
    if (last.role === 'tool') return text('parent final answer')
    if (last.content === `${CHILD}abort`) {
      // Abort the parent's turn while the child is mid-step; the model call ends with the signal.
      return new Promise((_, reject) => {
        request.signal.addEventListener('abort', () => reject(request.signal.reason), { once: true })
        queueMicrotask(() => controller.abort(new Error('bench abort')))
      })
    }
    if (last.content.startsWith(CHILD)) return text('child answer')
    return calls([{ name: 'subagent', input: { description: 'task', prompt: last.content === 'abort' ? `${CHILD}abort` : `${CHILD}work` } }])
  })
  const h = await host({ model })
  let aborted = 0
  const one = async (i: number) => {
    controller = new AbortController()
    const abort = i % 10 === 0
    const agent = h.ctx.agents.create({})
    const result = await agent.run(abort ? 'abort' : 'work', { signal: controller.signal })
    if (abort) {
      if (result.stopReason !== 'aborted') throw new Error(`soak: expected aborted, got ${JSON.stringify(result)}`)
      aborted++
    } else if (result.stopReason !== 'completed') throw new Error(`soak: ${JSON.stringify(result)}`)
    await agent.dispose()
  }
  const handles = () => process.getActiveResourcesInfo().length
  try {
    for (let i = 0; i < options.warmup; i++) await one(i)
    aborted = 0
    await new Promise((resolve) => setImmediate(resolve))
    gc()
    const heapStart = process.memoryUsage().heapUsed
    const listenersStart = listenerCount(h.ctx)
    const handlesStart = handles()
    const t0 = performance.now()
    for (let i = 0; i < options.delegations; i++) await one(i)
    const seconds = (performance.now() - t0) / 1000
    await new Promise((resolve) => setImmediate(resolve))
    gc()
    const heapEnd = process.memoryUsage().heapUsed
    return {
      delegations: options.delegations, aborted, seconds,
      heapStartMiB: heapStart / 2 ** 20, heapEndMiB: heapEnd / 2 ** 20, growthKiB: (heapEnd - heapStart) / 1024,
      liveRuns: h.ctx.subagents.runs().length,
      listenersStart, listenersEnd: listenerCount(h.ctx), handlesStart, handlesEnd: handles(),
    }
  } finally {
    await h.stop()
  }
}
