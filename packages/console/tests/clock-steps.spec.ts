// The OS wall clock steps (an NTP correction, a VM resumed, `date -s`) while the console shows runs: a node's elapsed time
// (`elapsedMs`, and an ended node's `endedAt - startedAt`) is the time it ran, measured on the monotonic clock, whichever
// way the clock stepped; its `startedAt` stays the wall-clock time it started (epoch ms).
import { expect } from 'chai'
import { Context } from 'cordis'
import ToolRegistry from '@cordis-subagents/tools'
import AgentRuntime, { type RunResult } from '@cordis-subagents/agent'
import SubagentService, { type SubagentOutcome, type SubagentRunInfo } from '@cordis-subagents/subagents-service'
import { withSteppedClock } from '@cordis-subagents/test-support'
import { nodeView, type ViewHost } from '../src/node-view.js'
import { TreeStore } from '../src/tree-store.js'

const HOUR = 3_600_000
const LIMITS = { maxTrees: 4, maxNodesPerTree: 8, maxTranscriptEntries: 10, maxEntryChars: 100 }
const RESULT = { stopReason: 'completed', text: 'ok', steps: 1, toolCalls: 0, usage: { inputTokens: 1, outputTokens: 1 } } as unknown as RunResult

describe('console: elapsed times when the wall clock steps', () => {
  let ctx: Context
  let host: ViewHost
  afterEach(() => ctx?.stop())
  beforeEach(async () => {
    ctx = new Context()
    ctx.plugin(ToolRegistry)
    ctx.plugin(AgentRuntime, {})
    ctx.plugin(SubagentService, {})
    await ctx.start()
    host = { store: new TreeStore(LIMITS, () => {}, () => {}), subagents: ctx.subagents }
  })
  const view = (runId: string) => nodeView(host, host.store.nodes.get(runId)!)

  it('a root run: its elapsed time running and ended is the time it ran; startedAt stays epoch ms', async () => {
    const agent = ctx.agents.create({ label: 'root' })
    await withSteppedClock(async (step) => {
      const before = Date.now()
      host.store.runStart(agent, 'go')
      expect(view('root-1').startedAt).to.be.within(before - 1000, Date.now() + 1000)
      step(HOUR)
      expect(view('root-1').elapsedMs, 'running, after a step forward').to.be.within(0, 60_000)
      step(-3 * HOUR)
      expect(view('root-1').elapsedMs, 'running, after a step back').to.be.within(0, 60_000)
      host.store.runEnd(agent, RESULT)
      step(2 * HOUR)
      const ended = view('root-1')
      expect(ended.state).to.equal('ended')
      expect(ended.elapsedMs, 'ended').to.be.within(0, 60_000)
      expect(ended.endedAt! - ended.startedAt, 'endedAt - startedAt, as a page reads it').to.equal(ended.elapsedMs)
    })
    await agent.dispose()
  })

  it('a delegation: its elapsed time while it runs is the time it ran; ended, the run\'s durationMs', async () => {
    await withSteppedClock(async (step) => {
      const info = { runId: 'run-1', provider: 'x', parentId: 'p1', depth: 1, startedAt: Date.now(), label: 'x' } as SubagentRunInfo
      host.store.start(info)
      step(HOUR)
      expect(view('run-1').elapsedMs, 'running, after a step forward').to.be.within(0, 60_000)
      step(-2 * HOUR)
      expect(view('run-1').elapsedMs, 'running, after a step back').to.be.within(0, 60_000)
      host.store.end(info, { stopReason: 'completed', output: 'ok', work: { steps: 1, toolCalls: 0, delegations: 0 }, durationMs: 42 } as SubagentOutcome)
      expect(view('run-1')).to.include({ state: 'ended', elapsedMs: 42, endedAt: info.startedAt + 42 })
    })
  })
})
