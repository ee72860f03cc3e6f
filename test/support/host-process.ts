// A real host process for test/durable-restart.slow.spec.ts (run with tsx): tools, agents with a
// scripted model, the subagents service, provider-spawn (children may ask with ask_parent), the
// subagent tool loaded sync and background, and ctx.checkpoints on SQLite or PostgreSQL.
//
//   host-process.ts first  <sqlite file | postgres>   runs a root turn that delegates three children:
//     "bg" (background, finishes), "ask" (asks "Which colour?" and parks), "hang" (never ends its
//     turn); prints READY with their run ids once the store shows settled / parked / running, then
//     waits to be killed.
//   host-process.ts second <sqlite file | postgres>   the same host restarted on the same store:
//     prints what it finds and what resuming gives (DONE { ... }), then stops cleanly.
//
// Every `subagent/start` is printed (START <runId>), so the test counts the children started.
import { Context, Logger } from 'cordis'
import { Database } from 'minato'
import SQLiteDriver from '@minatojs/driver-sqlite'
import Tools from '@cordis-subagents/tools'
import AgentRuntime, { type GenerateRequest, ScriptedModel, type ScriptedResponse } from '@cordis-subagents/agent'
import SubagentService from '@cordis-subagents/subagents-service'
import * as ProviderSpawn from '@cordis-subagents/provider-spawn'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import { Checkpoints, type StoredRun } from '@cordis-subagents/checkpoints'
import { PostgresDriver } from '@cordis-subagents/checkpoints/postgres'
import { stopApp } from './stop-app.js'

Logger.targets.splice(0, Logger.targets.length)
const [phase, store] = process.argv.slice(2)
const PG_URL = process.env.CHECKPOINTS_PG_URL ?? 'postgres://subagents:subagents@127.0.0.1:5432/subagents_test'
const print = (line: string) => process.stdout.write(`${line}\n`)

const firstUser = (request: GenerateRequest) => request.messages.find((m) => m.role === 'user')?.content ?? ''
const lastUser = (request: GenerateRequest) => [...request.messages].reverse().find((m) => m.role === 'user')?.content ?? ''
const toolResult = (request: GenerateRequest, name: string) => request.messages.find((m) => m.role === 'tool' && m.name === name)

/** Blocks until the turn is aborted (a child mid-turn when the host is killed). */
const never = (signal: AbortSignal) => new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }))

function respond(request: GenerateRequest): ScriptedResponse | Promise<ScriptedResponse> {
  const first = firstUser(request)
  if (lastUser(request) === 'please finish') {
    // The restored child must still have its task (issue 38, item 3): its original prompt comes first.
    const users = request.messages.filter((m) => m.role === 'user').map((m) => m.content)
    return { text: first.startsWith('hang:') ? 'finished after the restart' : `lost its task: saw ${JSON.stringify(users)}` }
  }
  if (first.startsWith('bg:')) return { text: 'one two three' }
  if (first.startsWith('ask:')) {
    const answer = toolResult(request, 'ask_parent')
    return answer ? { text: `painted ${answer.content}` } : { toolCalls: [{ name: 'ask_parent', input: { question: 'Which colour?' } }] }
  }
  if (first.startsWith('hang:')) return never(request.signal)
  if (request.messages.some((m) => m.role === 'tool')) return never(request.signal)
  return {
    text: 'delegating',
    toolCalls: [
      { name: 'subagent_bg', input: { description: 'bg', prompt: 'bg: count to three' } },
      { name: 'subagent', input: { description: 'ask', prompt: 'ask: paint the fence' } },
      { name: 'subagent', input: { description: 'hang', prompt: 'hang: think forever' } },
    ],
  }
}

const ctx = new Context()
ctx.plugin(Tools)
ctx.plugin(AgentRuntime, { model: 'script' })
ctx.plugin(SubagentService)
ctx.plugin(Database as never)
if (store === 'postgres') ctx.plugin(PostgresDriver as never, { url: PG_URL })
else ctx.plugin(SQLiteDriver, { path: store })
ctx.plugin(Checkpoints, { host: 'restart-host' })
ctx.plugin(ProviderSpawn, { name: 'spawn', askParent: true })
ctx.plugin(SubagentTool, { provider: 'spawn', toolName: 'subagent' })
ctx.plugin(SubagentTool, { provider: 'spawn', toolName: 'subagent_bg', mode: 'background', onTurnEnd: 'end' })
await ctx.start()
ctx.agents.registerModel('script', new ScriptedModel(respond))
ctx.on('subagent/start', (info) => print(`START ${info.runId}`))
const checkpoints = await new Promise<Checkpoints>((resolve) => ctx.inject(['checkpoints'], (inner) => resolve(inner.checkpoints)))
await ctx.subagents.ready('spawn')

/** Polls (every 20 ms, at most 60 s) until `check` gives a value. */
async function until<T>(check: () => Promise<T | undefined> | T | undefined, what: string): Promise<T> {
  const deadline = Date.now() + 60_000
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) {
      const runs = (await checkpoints.list()).map((run) => `${run.label || run.id}: ${run.state} ${run.stopReason ?? ''} ${run.result ?? ''}`)
      throw new Error(`host-process: gave up waiting for ${what}; the store has ${runs.join('; ') || 'no run'}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

const byLabel = (runs: StoredRun[], label: string) => runs.find((run) => run.label === label || run.label.endsWith(` ${label}`))

if (phase === 'first') {
  const root = ctx.agents.create({ label: 'root' })
  void root.run('ROOT: delegate three children')
  const ids = await until(async () => {
    const runs = await checkpoints.list()
    const bg = byLabel(runs, 'bg')
    const ask = byLabel(runs, 'ask')
    const hang = byLabel(runs, 'hang')
    if (bg?.state !== 'settled' || ask?.state !== 'parked' || hang?.state !== 'running') return undefined
    if (!(await checkpoints.questions.pending({ runId: ask.id })).length) return undefined
    return { bg: bg.id, ask: ask.id, hang: hang.id }
  }, 'bg settled, ask parked, hang running')
  print(`READY ${JSON.stringify(ids)}`)
  setInterval(() => {}, 1000)
} else {
  const runs = await checkpoints.list()
  const [bg, ask, hang] = ['bg', 'ask', 'hang'].map((label) => byLabel(runs, label)!)
  const pending = await until(() => ctx.subagents.pending().find((run) => run.runId === ask.id), 'the parked run listed by pending()')
  const report: Record<string, unknown> = {
    interruptedAtStart: checkpoints.interruptedAtStart,
    pending: { runId: pending.runId, question: pending.question.text },
    bg: { id: bg.id, state: bg.state, background: bg.background, result: bg.result, delivery: bg.delivery },
    hangBefore: hang.state,
    askBefore: ask.state,
  }
  const answered = await ctx.subagents.resume(ask.id, 'blue')
  report.ask = { stopReason: answered.stopReason, output: answered.output }
  const finished = await ctx.subagents.resume(hang.id, 'please finish')
  report.hang = { stopReason: finished.stopReason, output: finished.output }
  await until(async () => {
    const after = await checkpoints.list()
    return byLabel(after, 'ask')?.state === 'settled' && byLabel(after, 'hang')?.state === 'settled' ? true : undefined
  }, 'both resumed runs settled in the store')
  const after = await checkpoints.list()
  report.runs = after.length
  report.states = Object.fromEntries(after.map((run) => [run.label, run.state]))
  print(`DONE ${JSON.stringify(report)}`)
  await stopApp(ctx)
  process.exit(0)
}
