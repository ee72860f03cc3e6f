/// <reference types="mocha" />
// The OS wall clock steps (an NTP correction, a VM resumed, `date -s`) while a call waits for its child: the call's
// `durationMs` (in its result's metadata) is the time it waited, measured on the monotonic clock, whichever way the
// clock stepped: a plain call, a suspended call's resume, a continued run's call, and an answer given elsewhere.
import { expect } from 'chai'
import type { Agent } from '@cordis-subagents/agent'
import type { SubagentOutcome } from '@cordis-subagents/subagents-service'
import type { ToolExecContext, ToolResult, ToolSuspension } from '@cordis-subagents/tools'
import { withSteppedClock } from '@cordis-subagents/test-support'
import { call, type Harness, INPUT, loadProvider, loadTool, ProviderControl, setup, until } from './helpers.js'
import { settleStarted } from '../src/continued.js'
import { pendingResult } from '../src/questions.js'
import { controlVerbs } from '../src/verb-names.js'

const HOUR = 3_600_000
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const durationOf = (result: ToolResult) => (result.metadata as { durationMs: number }).durationMs

describe('subagent-tool: a call\'s durationMs when the wall clock steps', () => {
  let h: Harness
  let spawn: ProviderControl
  let parent: Agent

  beforeEach(async () => {
    h = await setup()
    spawn = new ProviderControl()
    spawn.parkable = true
    await loadProvider(h.ctx, spawn, { name: 'spawn' })
    parent = h.ctx.agents.create({ label: 'parent' })
  })
  afterEach(async () => { await h.stop() })

  it('a plain call: a step forward adds no hour, a step back takes no time away', async () => {
    await loadTool(h.ctx, { provider: 'spawn' })
    await withSteppedClock(async (step) => {
      const forward = call(h.ctx, INPUT, { agent: parent })
      await until(() => spawn.runs.length === 1)
      step(HOUR)
      spawn.last.complete('ok')
      expect(durationOf(await forward)).to.be.within(0, 60_000)

      const backward = call(h.ctx, INPUT, { agent: parent })
      await until(() => spawn.runs.length === 2)
      step(-2 * HOUR)
      await sleep(20)
      spawn.last.complete('ok')
      expect(durationOf(await backward)).to.be.within(10, 60_000)
    })
  })

  it('a suspended call\'s resume (continueParked): its result\'s durationMs is the time it waited after the answer', async () => {
    await loadTool(h.ctx, { provider: 'spawn', questions: 'escalate' })
    const asked = call(h.ctx, INPUT, { agent: parent })
    await until(() => spawn.runs.length === 1)
    spawn.last.ask('Which file?')
    const suspended = await asked
    await withSteppedClock(async (step) => {
      const resumed = h.ctx.tools.view().resume({ name: 'subagent', input: INPUT }, 'README.md', suspended.suspend as ToolSuspension,
        { signal: new AbortController().signal, agent: parent, toolCallId: 'c1' })
      await until(() => spawn.last.answers.length === 1)
      step(-HOUR)
      await sleep(20)
      spawn.last.complete('Summary')
      expect(durationOf(await resumed)).to.be.within(10, 60_000)
    })
  })

  it('a run another verb started (settleStarted, as subagent_continue): its durationMs is the time it ran', async () => {
    await withSteppedClock(async (step) => {
      const exec = { signal: new AbortController().signal, agent: parent, toolCallId: 'c1' } as ToolExecContext
      const run = await h.ctx.subagents.delegate('spawn', { prompt: 'go', parent, signal: exec.signal })
      const settled = settleStarted(h.ctx.subagents, run, { provider: 'spawn', timeout: 0, maxOutputBytes: 4096, questions: 'answer' },
        exec, new Set())
      step(HOUR)
      spawn.last.complete('ok')
      expect(durationOf(await settled)).to.be.within(0, 60_000)
    })
  })

  it('a question answered elsewhere: the next result the caller is told of took the time it took', async () => {
    h.ctx.tools.register({ name: 'subagent_reply', description: 'reply', input: (await import('zod')).z.strictObject({}), execute: () => ({ content: '' }) })
    const withdraw = controlVerbs(h.ctx.subagents).use({ reply: 'subagent_reply' })
    const run = await h.ctx.subagents.delegate('spawn', { prompt: 'go', parent, signal: new AbortController().signal })
    spawn.last.ask('Which file?')
    const outcome = await run.result
    const durations: number[] = []
    const format = (next: SubagentOutcome | undefined, durationMs: number): ToolResult => {
      durations.push(durationMs)
      return { content: next?.output ?? '' }
    }
    pendingResult(h.ctx.subagents, run, outcome.question!, { parent, canSuspend: false, timeout: 0, format }, { content: '', metadata: {} })
    await withSteppedClock(async (step) => {
      void h.ctx.subagents.resume(run.id, 'README.md')
      await until(() => spawn.last.answers.length === 1)
      step(HOUR)
      spawn.last.complete('Summary')
      await until(() => durations.length === 1, 'the next result was formatted for the caller')
    })
    expect(durations[0]).to.be.within(0, 60_000)
    await until(() => parent.inbox.size === 1, 'and posted to the caller')
    withdraw()
  })
})
