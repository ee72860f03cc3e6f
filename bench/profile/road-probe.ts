import { Session } from 'node:inspector/promises'
import type { GenerateResponse } from '@cordis-subagents/agent'
import { withoutCallerTracing } from '@cordis-subagents/shared'
import { BenchModel, calls, CHILD, delegationModel, host, lastMessage, text } from '../lib.js'

// The files of ours one delegation calls into, by V8's call counts (the inspector's precise coverage,
// in this process): `road.ts` prints them, `test/plain-road-files.spec.ts` checks them against the
// route drawn in packages/subagents-service/README.md.

/** `sync`: the tool returns the child's answer. `background`: it returns a handle, and the answer comes back to the parent's inbox. */
export type RoadMode = 'sync' | 'background'

export interface RoadFile {
  /** `package/path` without the extension, e.g. `agent/turn`. */
  file: string
  /** The named functions that ran in it. */
  ran: string[]
}

/** The background workload: the parent starts one child in the background, waits for its result message, then answers. */
function backgroundModel(): BenchModel {
  return new BenchModel((request): GenerateResponse => {
    const last = lastMessage(request)
    if (last.content.startsWith(CHILD)) return text('child answer')
    if (last.role === 'tool') return text('waiting for the child')
    if (last.content.includes('child answer')) return text('parent final answer')
    return calls([{ name: 'subagent', input: { description: 'look something up', prompt: `${CHILD}look something up` } }])
  })
}

const OURS = /\/packages\/([^/]+)\/(?:src|lib)\/(.+)\.[jt]s$/

/**
 * Every file of ours with a named function that ran during one delegation of `mode`, after a
 * warm-up (the parent's turn that makes the call included: the child's turn runs the same files),
 * over a real app (bench/lib.ts `host`: the real services, the spawn provider, a zero-latency model).
 */
export async function roadFiles(mode: RoadMode, warmUp = 20): Promise<RoadFile[]> {
  const background = mode === 'background'
  const h = await host({
    model: background ? backgroundModel() : delegationModel('subagent'),
    ...background ? { tool: { mode: 'background', onTurnEnd: 'wait' } } : {},
  })
  const session = new Session()
  try {
    const agents = withoutCallerTracing(h.ctx.agents)
    const once = async () => {
      const agent = agents.create({})
      const result = await agent.run('do the task')
      await agent.dispose()
      if (result.text !== 'parent final answer') throw new Error(`the delegation went wrong: ${result.stopReason} ${JSON.stringify(result.text)}`)
    }
    for (let i = 0; i < warmUp; i++) await once()
    session.connect()
    await session.post('Profiler.enable')
    await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false })
    await session.post('Profiler.takePreciseCoverage')
    await once()
    const { result } = await session.post('Profiler.takePreciseCoverage')
    await session.post('Profiler.stopPreciseCoverage')
    const files: RoadFile[] = []
    for (const script of result) {
      const match = OURS.exec(script.url)
      if (!match) continue
      const ran = [...new Set(script.functions.filter((fn) => fn.ranges[0].count > 0 && fn.functionName).map((fn) => fn.functionName))]
      if (ran.length) files.push({ file: `${match[1]}/${match[2]}`, ran })
    }
    return files.sort((a, b) => a.file.localeCompare(b.file))
  } finally {
    session.disconnect()
    await h.stop()
  }
}

/** Whether `file` (`package/path`) is a shared helper: counted apart. */
export const isShared = (file: string): boolean => file.startsWith('shared/')
