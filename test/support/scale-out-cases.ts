// The scale-out behaviour, run over a real deployment of 3 serving hosts on a shared PostgreSQL store,
// whatever stands in front of them: nginx (test/scale-out.deploy.spec.ts, the deployment tier) or provider-a2a's
// own pool of `urls` (test/scale-out-pool.slow.spec.ts, in `npm test`). The parent is a real cordis app
// delegating through provider-a2a. It checks: 300 delegations spread over the hosts, each run once;
// cancel through another host than the one running the task; one trace across hosts; one tree budget
// across hosts; a host SIGKILLed mid-task (its streamed runs hear of it at once, its tasks are interrupted
// and continue elsewhere once resumed, nothing runs twice).
import { execFileSync } from 'node:child_process'
import { expect } from 'chai'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { ScriptedModel } from '@cordis-subagents/agent'
import type { SubagentResult } from '@cordis-subagents/subagents-service'
import * as a2a from '@cordis-subagents/provider-a2a'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import Telemetry from '@cordis-subagents/telemetry'
import { REMOTE_PROMPT } from '@cordis-subagents/quickstart/demo-model'
import * as workspaceTools from '@cordis-subagents/quickstart/workspace-tools'
import { alive, ROOT } from '../helpers.js'
import { type Host, startHost } from './host.js'
import type { Deployment } from './scale-out.js'
import { eventually as until } from './async.js'

const DELEGATIONS = 300
/** Delegations in flight at once: under the hosts' 3 × 16 task slots. */
const IN_FLIGHT = 24
const LEASE_MS = 3000
const prompt = (job: string, tags = '') => `${REMOTE_PROMPT} (list_files on ".") and say which are directories. [job:${job}]${tags}`

/** Runs `jobs` with at most `limit` at once. */
async function pool<T>(count: number, limit: number, job: (index: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count)
  let next = 0
  await Promise.all(Array.from({ length: limit }, async () => {
    while (next < count) {
      const index = next++
      results[index] = await job(index)
    }
  }))
  return results
}

export interface Front<D extends Deployment> {
  /** The describe's title. */
  title: string
  /** What stands in front of the hosts, as test titles say it: `nginx`, `the provider's pool`. */
  via: string
  start(env: Record<string, string>): Promise<D>
  /** How provider-a2a reaches the deployment: `{ url }` of a load balancer, or `{ urls }` of the hosts. */
  remote(deployment: D): Pick<a2a.Config, 'url' | 'urls'>
}

/** The scale-out behaviour, the same whatever stands in front of the hosts. */
export function scaleOutCases<D extends Deployment>(front: Front<D>) {
  describe(front.title, function () {
    this.timeout(110_000)
    let deployment: D
    let host: Host
    let exporter: InMemorySpanExporter

    before(async function () {
      this.timeout(150_000)
      execFileSync(process.execPath, [`${ROOT}/node_modules/typescript/bin/tsc`, '-b'], { cwd: ROOT, stdio: 'pipe' })
      deployment = await front.start({ SCALE_OUT_LEASE_MS: String(LEASE_MS), SCALE_OUT_TRACES: '1', SCALE_OUT_MODEL_DELAY: '5' })
      exporter = new InMemorySpanExporter()
      const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
      host = await startHost({
        subagents: { maxChildren: 64 },
        before(ctx) {
          ctx.plugin(Telemetry, { tracerProvider: provider })
          // The parent's tools are the ceiling it sends along: the remote agent may use list_files because the parent may.
          ctx.plugin(workspaceTools, { root: ROOT } as never)
          ctx.plugin(a2a, { name: 'remote', ...front.remote(deployment), bearerToken: deployment.token, cancelGrace: 10_000 } as a2a.Config)
          ctx.plugin(SubagentTool, { provider: 'remote', toolName: 'subagent_remote' })
        },
      })
      await host.ctx.subagents.ready('remote', { timeout: 30_000 })
    })

    after(async function () {
      this.timeout(60_000)
      await host?.stop()
      if (!deployment) return
      const code = await deployment.stop()
      expect(code, deployment.stderr()).to.equal(0)
      for (const pid of deployment.pids) expect(alive(pid), `pid ${pid} after the deployment stopped`).to.equal(false)
    })

    /** One delegation through the front, disposed after; its result. */
    type Started = { cancel(reason?: string): void; info: { childId?: string } }
    async function delegate(text: string, parent = host.ctx.agents.create(), onRun?: (run: Started) => void): Promise<SubagentResult> {
      const run = await host.ctx.subagents.delegate('remote', { prompt: text, parent, signal: new AbortController().signal })
      onRun?.(run)
      try {
        return await run.result
      } finally {
        await run.dispose()
      }
    }

    const hostOfPid = (output: string) => {
      const pid = Number(/pid (\d+)\)/.exec(output)?.[1])
      return deployment.hosts.find((h) => h.pid === pid)?.name ?? `unknown pid ${pid}`
    }

    it(`${DELEGATIONS} delegations through ${front.via} complete, spread over the 3 hosts, each run exactly once`, async () => {
      const parents = Array.from({ length: DELEGATIONS / 10 }, () => host.ctx.agents.create())
      const results = await pool(DELEGATIONS, IN_FLIGHT, (i) => delegate(prompt(`d${i}`), parents[i % parents.length]))
      await Promise.all(parents.map((parent) => parent.dispose()))
      const perHost = new Map<string, number>()
      for (const result of results) {
        expect(result.stopReason, result.diagnostic).to.equal('completed')
        expect(result.output).to.match(/top-level entries; directories: .*packages/)
        perHost.set(hostOfPid(result.output), (perHost.get(hostOfPid(result.output)) ?? 0) + 1)
      }
      console.log(`      per host: ${[...perHost].map(([name, n]) => `${name} ${n}`).join(', ')}`)
      expect([...perHost.keys()].sort()).to.deep.equal(deployment.hosts.map((h) => h.name).sort())
      for (const [name, n] of perHost) expect(n, name).to.be.at.least(DELEGATIONS / 10)
      // Executions, counted by the model at the edge: every job started once, on the host that answered it.
      const starts = deployment.calls().filter((call) => call.job.startsWith('d') && call.step === 1)
      expect(starts).to.have.length(DELEGATIONS)
      expect(new Set(starts.map((call) => call.job)).size).to.equal(DELEGATIONS)
      for (const [name, n] of perHost) expect(starts.filter((call) => call.host === name), name).to.have.length(n)
    })

    it('cancel through another host than the one running the task: the running host stops it, every host reads it canceled', async () => {
      const [a, b, c] = deployment.hosts
      const call = (url: string, method: string, params: unknown) => rpc(deployment, url, method, params)
      const sent = await call(a.url, 'SendMessage', {
        message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text: prompt('cancel-1', ' [hold]') }] },
        configuration: { returnImmediately: true },
      })
      const id: string = sent.result.task.id
      await until(() => deployment.calls().some((x) => x.job === 'cancel-1'), 'the task runs on host-a')
      const canceled = await call(b.url, 'CancelTask', { id })
      expect(canceled.result?.status?.state, JSON.stringify(canceled)).to.equal('TASK_STATE_CANCELED')
      expect((await call(c.url, 'GetTask', { id })).result.status.state).to.equal('TASK_STATE_CANCELED')
      expect(deployment.calls().filter((x) => x.job === 'cancel-1')).to.deep.equal([{ host: a.name, job: 'cancel-1', step: 1 }])

      // The same through provider-a2a and the front: run.cancel() sends CancelTask to whichever host the front picks.
      const result = await delegate(prompt('cancel-2', ' [hold]'), undefined, (run) => {
        void until(() => deployment.calls().some((x) => x.job === 'cancel-2'), 'cancel-2 runs').then(() => run.cancel('the test cancels'))
      })
      expect(result.stopReason, result.diagnostic).to.equal('aborted')
      expect(result.diagnostic ?? '').to.match(/canceled/i)
      expect(deployment.calls().filter((x) => x.job === 'cancel-2')).to.have.length(1)
    })

    it('one trace across hosts: each remote task continues the parent\'s trace under its delegating call', async () => {
      exporter.reset()
      const jobs = ['t1', 't2', 't3']
      host.ctx.agents.registerModel('fan-out', new ScriptedModel([
        { toolCalls: jobs.map((job) => ({ name: 'subagent_remote', input: { description: `part ${job}`, prompt: prompt(job, ' [wait:400]') } })) },
        { text: 'gathered' },
      ]))
      const parent = host.ctx.agents.create({ model: 'fan-out' })
      const run = await parent.run('fan out over the hosts')
      await parent.dispose()
      expect(run.text).to.equal('gathered')
      const ours = exporter.getFinishedSpans()
      const root = ours.find((span) => span.name.startsWith('invoke_agent') && !span.parentSpanContext)
      expect(root, ours.map((span) => span.name).join(', ')).to.not.equal(undefined)
      const traceId = root!.spanContext().traceId
      const delegating = ours.filter((span) => span.name === 'subagent remote')
      expect(delegating).to.have.length(3)
      expect(delegating.every((span) => span.spanContext().traceId === traceId)).to.equal(true)
      const remote = await until(() => {
        const found = deployment.spans().filter((span) => span.traceId === traceId && span.name === 'invoke_agent a2a')
        return found.length === 3 ? found : undefined
      }, 'the hosts exported the three remote runs')
      expect(remote.map((span) => span.parentSpanId).sort()).to.deep.equal(delegating.map((span) => span.spanContext().spanId).sort())
      const hosts = new Set(remote.map((span) => span.host))
      console.log(`      the trace's remote runs ran on: ${[...hosts].join(', ')}`)
      expect(hosts.size).to.be.at.least(2)
      // Every span the hosts wrote for these runs (model calls, tools) is in the same trace.
      const runIds = new Set(remote.map((span) => span.spanId))
      const children = deployment.spans().filter((span) => span.parentSpanId && runIds.has(span.parentSpanId))
      expect(children.length).to.be.at.least(3 * 3)
      expect(children.every((span) => span.traceId === traceId)).to.equal(true)
    })

    it('one tree budget across hosts: children on different hosts report their spend, the parent stops them at its limit', async () => {
      const MAX_STEPS = 6
      // Each child model call takes 2 s, so a child's spend report and the parent's cancel have 2 s to
      // cross the front before that child could start one more call: the bound below allows one call in
      // flight per child past the limit, and no more.
      const jobs = ['b1', 'b2', 'b3']
      host.ctx.agents.registerModel('budget-root', new ScriptedModel([
        { toolCalls: jobs.map((job) => ({ name: 'subagent_remote', input: { description: `loop ${job}`, prompt: prompt(job, ' [loop] [wait:2000]') } })) },
        { text: 'done' },
      ]))
      const parent = host.ctx.agents.create({ model: 'budget-root', budget: { maxSteps: MAX_STEPS } })
      const result = await parent.run('fan out under a budget')
      const toolResults = parent.transcript.messages.filter((message) => message.role === 'tool')
      expect(toolResults).to.have.length(jobs.length)
      for (const message of toolResults) {
        expect(message.isError, message.content).to.equal(true)
        expect(message.content).to.match(/budget/i)
      }
      const calls = deployment.calls().filter((call) => jobs.includes(call.job))
      const hosts = new Set(calls.map((call) => call.host))
      console.log(`      tree budget across hosts (${[...hosts].join(', ')}): root ${result.steps} + children ${calls.length} model calls (bound ${MAX_STEPS + jobs.length})`)
      expect(hosts.size).to.be.at.least(2)
      expect(result.steps + calls.length).to.be.at.most(MAX_STEPS + jobs.length)
      expect(parent.budget.spent.steps).to.be.at.least(Math.min(result.steps + calls.length, MAX_STEPS + 1))
      await parent.dispose()
    })

    it('a host SIGKILLed mid-task: its streamed runs hear of it at once, its tasks are interrupted and continue on another host once resumed, nothing runs twice', async () => {
      const jobs = Array.from({ length: 6 }, (_, i) => `k${i}`)
      const started = new Map<string, Started & { resume?(answer: string): Promise<SubagentResult> }>()
      const parent = host.ctx.agents.create()
      const results = jobs.map((job) => host.ctx.subagents.delegate('remote', { prompt: prompt(job, ' [hold]'), parent, signal: new AbortController().signal })
        .then((run) => {
          started.set(job, run)
          return run.result
        }))
      // Mid-task: every host acknowledged its task (the parent's run started: the stream's first event
      // came) and its model is working on it.
      const running = await until(() => {
        const starts = deployment.calls().filter((call) => jobs.includes(call.job))
        return starts.length === jobs.length && started.size === jobs.length ? starts : undefined
      }, 'the six tasks run')
      const victim = deployment.hosts.find((h) => running.some((call) => call.host === h.name && alive(h.pid)))!
      const lost = running.filter((call) => call.host === victim.name).map((call) => call.job)
      const kept = jobs.filter((job) => !lost.includes(job))
      console.log(`      SIGKILL ${victim.name}: its tasks ${lost.join(', ')}; the others ${kept.join(', ')}`)
      process.kill(victim.pid, 'SIGKILL')
      // The parent's runs of the lost tasks hear of it through the broken stream: another host (through
      // the front) answers that the task was interrupted (its host's database session ended), long before the lease.
      for (const job of lost) {
        const result = await results[jobs.indexOf(job)]
        expect(result.stopReason, `${job}: ${result.diagnostic}`).to.equal('pending')
        expect(result.question?.text).to.match(new RegExp(`host ${victim.name} .*died mid-turn`))
        const task = (await rpc(deployment, deployment.front(), 'GetTask', { id: started.get(job)!.info.childId })).result
        expect(task.status.state).to.equal('TASK_STATE_INPUT_REQUIRED')
        expect(task.metadata.cordisSubagents).to.deep.include({ code: 'HOST_LOST', host: victim.name, stopReason: 'interrupted' })
      }
      // Resumed, each lost task runs its lost turn again on a surviving host, once, and completes.
      for (const job of lost) {
        const resumed = await started.get(job)!.resume!(`go on [job:${job}]`)
        expect(resumed.stopReason, `${job}: ${resumed.diagnostic}`).to.equal('completed')
        const turns = deployment.calls().filter((call) => call.job === job && call.step === 1)
        expect(turns.map((call) => call.host === victim.name), job).to.deep.equal([true, false])
      }
      // The other hosts' tasks were untouched: they still run; cancel them (through the front) and they end aborted.
      for (const job of kept) started.get(job)!.cancel('the test is done')
      for (const job of kept) expect((await results[jobs.indexOf(job)]).stopReason, job).to.equal('aborted')
      for (const job of kept) expect(deployment.calls().filter((call) => call.job === job), job).to.have.length(1)
      for (const run of started.values()) await (run as unknown as { dispose(): Promise<void> }).dispose()
      await parent.dispose()
      // New delegations go to the surviving hosts.
      const after = await Promise.all([1, 2, 3, 4].map((i) => delegate(prompt(`after-${i}`))))
      for (const result of after) {
        expect(result.stopReason, result.diagnostic).to.equal('completed')
        expect(hostOfPid(result.output)).to.not.equal(victim.name)
      }
    })
  })
}

/** A JSON-RPC call (A2A 1.0) with the deployment's token, to the front or to one host directly. */
async function rpc(deployment: Deployment, url: string, method: string, params: unknown): Promise<any> {
  const response = await fetch(`${url}/a2a/jsonrpc`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${deployment.token}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  })
  return response.json()
}
