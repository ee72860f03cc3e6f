/// <reference types="mocha" />
// The crossing read by a served agent that is not the quick start's: the parent's depth ceiling
// and this server's own, the parent's remaining budget, its tool ceiling (intersected with the
// configured tool filter) and its trace context; and the spend of the task's tree reported as it goes.
import { expect } from 'chai'
import { Context, Service } from 'cordis'
import { type StreamResponse, TaskState } from '@a2a-js/sdk'
import { type Agent, type GenerateRequest, ScriptedModel } from '@cordis-subagents/agent'
import { spendFromMeta } from '@cordis-subagents/shared'
import { bearer, client10, drain, message10, serve, type Served } from './helpers.js'

type Status = { state: TaskState; message?: { parts: Array<{ content: { value: string } }> } }
type StatusEvent = { status: Status; metadata?: Record<string, unknown> }

function statuses(events: StreamResponse[]): StatusEvent[] {
  return events.filter((event) => event.payload?.$case === 'statusUpdate').map((event) => (event.payload as unknown as { value: StatusEvent }).value)
}

function said(status: Status): string {
  return status.message?.parts.map((part) => part.content.value).join('') ?? ''
}

async function run(served: Served, text: string, crossing?: Record<string, unknown>): Promise<StreamResponse[]> {
  const client = await client10(served.server.url, bearer(served.server.token))
  return drain(client.sendMessageStream(message10(text, crossing && { cordisSubagents: crossing }) as never))
}

describe('serve-a2a: the crossing, read by the served agent', function () {
  this.timeout(20_000)
  let served: Served | undefined
  afterEach(async () => {
    await served?.ctx.stop()
    served = undefined
  })

  it('refuses a task deeper than the parent\'s ceiling (rejected, the model never called)', async () => {
    served = await serve()
    const events = await run(served, 'deep', { depth: 4, maxDepth: 3 })
    // Refused before its agent starts: the task is announced submitted (never working), then rejected.
    expect(events[0].payload?.$case).to.equal('task')
    expect((events[0].payload as unknown as { value: { status: Status } }).value.status.state).to.equal(TaskState.TASK_STATE_SUBMITTED)
    expect(statuses(events).some((event) => event.status.state === TaskState.TASK_STATE_WORKING)).to.equal(false)
    const final = statuses(events).at(-1)!
    expect(final.status.state).to.equal(TaskState.TASK_STATE_REJECTED)
    expect(said(final.status)).to.equal('Refused: this task would run at depth 4, deeper than the ceiling 3 of its delegation tree.')
    expect(final.metadata).to.deep.equal({ cordisSubagents: { stopReason: 'error', code: 'DEPTH_REFUSED' } })
    expect(served.model.callCount).to.equal(0)
  })

  it('refuses a task deeper than this server\'s own maxDepth, whatever the parent allows', async () => {
    served = await serve({ maxDepth: 1 })
    const final = statuses(await run(served, 'deep', { depth: 2, maxDepth: 5 })).at(-1)!
    expect(final.status.state).to.equal(TaskState.TASK_STATE_REJECTED)
    expect(said(final.status)).to.match(/depth 2, deeper than the ceiling 1/)
    const ok = statuses(await run(served, 'shallow', { depth: 1, maxDepth: 5 })).at(-1)!
    expect(ok.status.state).to.equal(TaskState.TASK_STATE_COMPLETED)
  })

  it('honours SUBAGENT_MAX_DEPTH of its own process (a parent host started it): deeper tasks are rejected', async () => {
    process.env.SUBAGENT_MAX_DEPTH = '1'
    try {
      served = await serve()
    } finally {
      delete process.env.SUBAGENT_MAX_DEPTH
    }
    const final = statuses(await run(served, 'deep', { depth: 2 })).at(-1)!
    expect(final.status.state).to.equal(TaskState.TASK_STATE_REJECTED)
    expect(said(final.status)).to.match(/depth 2, deeper than the ceiling 1/)
    expect(served.model.callCount).to.equal(0)
  })

  it('the tool ceiling intersects the configured filter: the model sees only tools both allow', async () => {
    const seen: string[][] = []
    served = await serve({ tools: { deny: ['secret'] } }, (request: GenerateRequest) => {
      seen.push(request.tools.map((tool) => tool.name).sort())
      return ScriptedModel.text('ok')
    })
    await run(served, 'no ceiling')
    await run(served, 'ceiling with secret', { allowedTools: ['secret', 'echo'] })
    await run(served, 'ceiling without echo', { allowedTools: ['secret'] })
    expect(seen).to.deep.equal([['echo'], ['echo'], []])
  })

  it('the parent\'s remaining budget lowers the task\'s limits (never raises the configured ones)', async () => {
    const script = (request: GenerateRequest) => request.messages.some((message) => message.role === 'tool')
      ? ScriptedModel.text('finished') : ScriptedModel.call('echo', { text: 'x' })
    served = await serve({ budget: { maxSteps: 5 } }, script)
    const lowered = statuses(await run(served, 'one step only', { budget: { maxSteps: 1 } })).at(-1)!
    expect(lowered.status.state).to.equal(TaskState.TASK_STATE_FAILED)
    expect((lowered.metadata!.cordisSubagents as { stopReason: string }).stopReason).to.equal('budget')
    await served.ctx.stop()
    served = await serve({ budget: { maxSteps: 1 } }, script)
    const kept = statuses(await run(served, 'the parent offers more', { budget: { maxSteps: 50 } })).at(-1)!
    expect((kept.metadata!.cordisSubagents as { stopReason: string }).stopReason).to.equal('budget')
    served.model.requests.length = 0
    await served.ctx.stop()
    served = await serve({ budget: { maxSteps: 5 } }, script)
    const free = statuses(await run(served, 'no budget sent')).at(-1)!
    expect(free.status.state).to.equal(TaskState.TASK_STATE_COMPLETED)
  })

  it('reports the spend of the task\'s tree as it goes (working status metadata), and the final spend with usage and stop reason', async () => {
    let step = 0
    // A model that takes a moment, as a real one does: the reports of the steps before go out meanwhile.
    served = await serve({}, async () => {
      await new Promise((resolve) => setTimeout(resolve, 5))
      return ++step <= 2 ? ScriptedModel.call('echo', { text: `step ${step}` }) : ScriptedModel.text('done')
    })
    const all = statuses(await run(served, 'work'))
    const reports = all.filter((event) => event.status.state === TaskState.TASK_STATE_WORKING)
      .map((event) => spendFromMeta(event.metadata)).filter(Boolean)
    expect(reports.length).to.be.greaterThan(0)
    // Cumulative: never shrinks; the last working report has seen at least the two tool calls.
    for (let i = 1; i < reports.length; i++) expect(reports[i]!.steps).to.be.at.least(reports[i - 1]!.steps)
    const final = all.at(-1)!
    expect(final.status.state).to.equal(TaskState.TASK_STATE_COMPLETED)
    const spent = spendFromMeta(final.metadata)!
    expect(spent).to.deep.equal({ steps: 3, toolCalls: 2, delegations: 0, tokens: 45, usage: { inputTokens: 30, outputTokens: 15 } })
    expect((final.metadata!.cordisSubagents as { stopReason: string }).stopReason).to.equal('completed')
    // The last figure is said once, by the final status: no report of it right before (the last report came before the
    // last model call's tokens, which the run ends on).
    expect(reports.at(-1)!.tokens).to.be.below(spent.tokens)
  })

  it('a step\'s tool calls go up in one working update with the spend; a turn that ends first sends none (the final status says it)', async () => {
    let step = 0
    // Slow: each step's calls and charges come a turn of the event loop after the last update.
    served = await serve({}, async () => {
      await new Promise((resolve) => setTimeout(resolve, 5))
      return ++step === 1 ? { toolCalls: [{ name: 'echo', input: { text: 'a' } }, { name: 'secret', input: {} }] } : ScriptedModel.text('done')
    })
    const working = statuses(await run(served, 'work')).filter((event) => event.status.state === TaskState.TASK_STATE_WORKING)
    const calls = working.filter((event) => said(event.status))
    expect(calls.map((event) => said(event.status))).to.deep.equal(['calls echo, secret'])
    const meta = calls[0].metadata!.cordisSubagents as { update: unknown }
    expect(meta.update).to.deep.equal({ kind: 'tool-call', tool: 'secret', tools: ['echo', 'secret'], step: 1 })
    expect(spendFromMeta(calls[0].metadata)!.toolCalls).to.equal(2)
    await served.ctx.stop()
    // Quick: the whole turn runs before the next turn of the event loop; its calls are in the final status's figures.
    step = 0
    served = await serve({}, () => ++step === 1 ? ScriptedModel.call('echo', { text: 'a' }) : ScriptedModel.text('done'))
    const events = await run(served, 'work')
    expect(events.map((event) => event.payload?.$case)).to.deep.equal(['task', 'artifactUpdate', 'statusUpdate'])
    expect(spendFromMeta(statuses(events)[0].metadata)!.toolCalls).to.equal(1)
  })

  it('continues the parent\'s trace when a telemetry service is loaded', async () => {
    const continued: Array<{ agent: string; traceparent?: string }> = []
    class FakeTelemetry extends Service {
      constructor(ctx: Context) {
        super(ctx, 'telemetry')
      }

      continueTrace(agent: Agent, context: { traceparent?: string } | undefined) {
        continued.push({ agent: agent.id, traceparent: context?.traceparent })
        return !!context
      }
    }
    served = await serve()
    served.ctx.plugin(FakeTelemetry)
    await served.ctx.lifecycle.flush()
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
    await run(served, 'traced', { traceparent })
    expect(continued).to.have.length(1)
    expect(continued[0].traceparent).to.equal(traceparent)
    expect(continued[0].agent).to.match(/^a2a-/)
  })

  it('a task whose setup throws after its agent was made fails, and its agent is disposed (nothing left running)', async () => {
    const made: Agent[] = []
    class ThrowingTelemetry extends Service {
      constructor(ctx: Context) {
        super(ctx, 'telemetry')
      }

      continueTrace(agent: Agent) {
        made.push(agent)
        throw new Error('the tracer broke')
      }
    }
    served = await serve()
    served.ctx.plugin(ThrowingTelemetry)
    await served.ctx.lifecycle.flush()
    const events = await run(served, 'traced', { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' })
    expect(made).to.have.length(1)
    const last = events.at(-1)!.payload!
    const state = last.$case === 'statusUpdate' ? last.value.status!.state : last.$case === 'task' ? last.value.status!.state : undefined
    expect(state).to.equal(TaskState.TASK_STATE_FAILED)
    expect(last.$case === 'statusUpdate' && said(last.value.status as Status)).to.equal('The task could not be set up: the tracer broke')
    expect((made[0] as unknown as { lifetime: AbortSignal }).lifetime.aborted, 'the agent was disposed').to.equal(true)
    expect(served.server.runningTasks ?? 0).to.equal(0)
  })
})
