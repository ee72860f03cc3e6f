// A real host process for test/durable-schedules.slow.spec.ts (run with tsx), driven over a line
// protocol: one JSON command a line on stdin, one JSON reply a line on stdout ({ n, ...reply }).
//
//   durable-schedule-host.ts <sqlite file | postgres> <log file>
//   durable-schedule-host.ts        (a spare: its first line in is { "open": [store, log] })
//
// A spare loads its modules (the most of a start: tsx loads every package from src) while the host before
// it still plays its schedule; it opens nothing and starts no Context until that first line comes.
//
// The host: tools, agents with the scripted model of durable-schedule-model.ts, the service,
// provider-spawn (children ask with ask_parent), subagent-control (subagent_reply), the subagent
// tool three times (`subagent`: sync, questions answer; `subagent_esc`: sync, escalate;
// `subagent_bg`: background, onTurnEnd wait), all with reattach, and ctx.checkpoints. Each task T<n>
// has a root agent with the fixed id `root-T<n>` (created from a checkpoint with that id, as a host
// restores its agents), so a reattach after a restart names the same parent.
//
// Commands (see durable-schedule-client.ts): start, reply, answer-root, resume, reattach, roots,
// store, stop. The first line out is { n: 0, ready: true, interruptedAtStart }.
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { Context, Logger } from 'cordis'
import { Database } from 'minato'
import SQLiteDriver from '@minatojs/driver-sqlite'
import Tools from '@cordis-subagents/tools'
import AgentRuntime, { type Agent, type RunResult, ScriptedModel } from '@cordis-subagents/agent'
import SubagentService from '@cordis-subagents/subagents-service'
import * as ProviderSpawn from '@cordis-subagents/provider-spawn'
import * as SubagentControl from '@cordis-subagents/subagent-tool/control'
import * as SubagentTool from '@cordis-subagents/subagent-tool'
import { Checkpoints } from '@cordis-subagents/checkpoints'
import { PostgresDriver } from '@cordis-subagents/checkpoints/postgres'
import { type Kind, logTo, type Mode, respond, rootPrompt } from './durable-schedule-model.js'

Logger.targets.splice(0, Logger.targets.length)
const input = createInterface({ input: process.stdin })
const [store, logFile] = process.argv.length > 2
  ? process.argv.slice(2)
  : (JSON.parse(String((await once(input, 'line'))[0])) as { open: [string, string] }).open
const PG_URL = process.env.CHECKPOINTS_PG_URL ?? 'postgres://subagents:subagents@127.0.0.1:5432/subagents_test'
/** How long the host waits for a task to come to rest, or a settle to show in the store. */
const QUIET_MS = 20_000
const log = logTo(logFile)
const out = (line: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(line)}\n`)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const taskOf = (label = '') => /\bT\d+\b/.exec(label)?.[0] ?? label

type RootState = 'running' | 'waiting' | 'done' | 'pending' | 'failed'
interface Root { agent: Agent; state: RootState; output?: string; error?: string }
const roots = new Map<string, Root>()
const hanging = new Set<string>()
const replies = new Map<string, (answer: string) => void>()

const desk = {
  wait(task: string, signal: AbortSignal): Promise<string> {
    const root = roots.get(task)
    if (root) root.state = 'waiting'
    return new Promise((resolve, reject) => {
      replies.set(task, resolve)
      signal.addEventListener('abort', () => {
        replies.delete(task)
        reject(signal.reason)
      }, { once: true })
    })
  },
}

const ctx = new Context()
ctx.plugin(Tools)
ctx.plugin(AgentRuntime, { model: 'script' })
ctx.plugin(SubagentService)
ctx.plugin(Database as never)
if (store === 'postgres') ctx.plugin(PostgresDriver as never, { url: PG_URL })
else ctx.plugin(SQLiteDriver, { path: store })
// maxList: the harness's store view reads every run of its world (a world holds at most a few hundred).
ctx.plugin(Checkpoints, { host: 'schedule-host', maxList: 100_000 })
ctx.plugin(ProviderSpawn, { name: 'spawn', askParent: true })
ctx.plugin(SubagentControl)
ctx.plugin(SubagentTool, { provider: 'spawn', toolName: 'subagent', reattach: true })
ctx.plugin(SubagentTool, { provider: 'spawn', toolName: 'subagent_esc', questions: 'escalate', reattach: true })
ctx.plugin(SubagentTool, { provider: 'spawn', toolName: 'subagent_bg', mode: 'background', onTurnEnd: 'wait', reattach: true })
await ctx.start()
ctx.agents.registerModel('script', new ScriptedModel((request) => respond({ log, desk, hanging: (task) => hanging.add(task) }, request)))
const checkpoints = await new Promise<Checkpoints>((resolve) => ctx.inject(['checkpoints'], (inner) => resolve(inner.checkpoints)))
await ctx.subagents.ready('spawn')

ctx.on('subagent/start', (info) => log({ k: 'start', runId: info.runId, task: taskOf(info.label) }))
ctx.on('subagent/end', (info, outcome) => {
  log({ k: 'end', runId: info.runId, task: taskOf(info.label), stopReason: outcome.stopReason, output: outcome.output })
  void acknowledge(info.runId)
})

ctx.on('subagent/pending', (info) => void acknowledge(info.runId, 'parked'))

/**
 * Logs `durable` once the store reads the run back ended (or its question pending): from then on a
 * SIGKILL may not lose that state. Gives up silently after the bound (the invariants then excuse nothing).
 */
async function acknowledge(runId: string, what: 'settled' | 'parked' = 'settled'): Promise<void> {
  const deadline = Date.now() + QUIET_MS
  while (Date.now() < deadline) {
    const stored = what === 'parked'
      ? (await checkpoints.questions.pending({ runId }).catch(() => [])).length > 0
      : ['settled', 'closed'].includes((await checkpoints.load(runId).catch(() => undefined))?.state ?? '')
    if (stored) return log({ k: 'durable', runId, what })
    await sleep(25)
  }
}

/** The root of `task`: the live one, or a new agent with the fixed id `root-<task>` (as after a restart). */
function rootOf(task: string): Root {
  const live = roots.get(task)
  if (live && !live.agent.disposed) return live
  const template = ctx.agents.create({ label: 'template' })
  const checkpoint = { ...template.checkpoint(), id: `root-${task}`, label: `root ${task}`, messages: [] }
  void template.dispose()
  const root: Root = { agent: ctx.agents.create({ restore: checkpoint }), state: 'done' }
  roots.set(task, root)
  return root
}

function drive(task: string, root: Root, turn: () => Promise<RunResult>): void {
  root.state = 'running'
  turn().then((result) => {
    root.state = result.stopReason === 'pending' ? 'pending' : 'done'
    root.output = result.text
  }, (error: Error & { code?: string }) => {
    root.state = 'failed'
    root.error = `${error.code ?? 'ERROR'}: ${error.message}`
  })
}

/** Waits until the task rests: its root's turn ended (done / pending / failed), waits for a reply, or its child hangs. */
async function quiet(task: string): Promise<Record<string, unknown>> {
  const root = roots.get(task)!
  const deadline = Date.now() + QUIET_MS
  while (root.state === 'running' && !hanging.has(task)) {
    if (Date.now() > deadline) return { state: 'running', note: `not at rest after ${QUIET_MS} ms` }
    await sleep(20)
  }
  return { state: root.state === 'running' ? 'hanging' : root.state, output: root.output, error: root.error }
}

const codeOf = (error: unknown) => {
  const { code, message } = error as { code?: string; message?: string }
  return `${code ?? 'ERROR'}: ${message ?? String(error)}`
}

type Command = { n: number; cmd: string; task: string; mode: Mode; kind: Kind; answer: string; runId: string }

async function execute(command: Command): Promise<Record<string, unknown>> {
  const { cmd, task } = command
  if (cmd === 'start' || cmd === 'reattach') {
    const root = rootOf(task)
    if (root.state === 'running' || root.state === 'waiting' || root.agent.parked) return { skipped: `root is ${root.state}` }
    hanging.delete(task)
    drive(task, root, () => root.agent.run(rootPrompt(task, command.mode, command.kind)))
    return quiet(task)
  }
  if (cmd === 'reply') {
    const reply = replies.get(task)
    if (!reply) return { skipped: 'no model call waits for a reply' }
    replies.delete(task)
    roots.get(task)!.state = 'running'
    reply(command.answer)
    return quiet(task)
  }
  if (cmd === 'answer-root') {
    const root = roots.get(task)
    if (!root?.agent.parked || root.state !== 'pending') return { skipped: 'root is not parked' }
    drive(task, root, () => root.agent.resume(command.answer))
    return quiet(task)
  }
  if (cmd === 'resume') {
    try {
      const outcome = await ctx.subagents.resume(command.runId, command.answer)
      return { stopReason: outcome.stopReason, output: outcome.output }
    } catch (error) {
      return { error: codeOf(error) }
    }
  }
  if (cmd === 'roots') {
    return {
      roots: Object.fromEntries([...roots].map(([name, root]) => [name, {
        state: root.state,
        seen: root.agent.transcript.messages.filter((m) => m.role !== 'assistant').map((m) => String(m.content)).join('\n').slice(-4000),
      }])),
    }
  }
  if (cmd === 'store') {
    const records = (await checkpoints.list())
      .map((r) => ({ id: r.id, path: r.path, label: r.label, state: r.state, stopReason: r.stopReason, result: r.result }))
    // pending() is read from the store when the journal appears: give it the bound to agree.
    const deadline = Date.now() + QUIET_MS
    let questions: string[], pending: string[]
    do {
      questions = (await checkpoints.questions.pending()).map((q) => q.runId).sort()
      pending = ctx.subagents.pending().map((p) => p.runId).sort()
      if (questions.join() === pending.join()) break
      await sleep(25)
    } while (Date.now() < deadline)
    return { records, questions, pending, interruptedAtStart: checkpoints.interruptedAtStart }
  }
  if (cmd === 'stop') {
    log({ k: 'stopping' })
    await ctx.stop()
    return { stopped: true }
  }
  return { error: `unknown command ${cmd}` }
}

out({ n: 0, ready: true, interruptedAtStart: checkpoints.interruptedAtStart })
// One command at a time, in order: the harness waits for each reply before the next.
let chain = Promise.resolve()
input.on('line', (line) => {
  const command = JSON.parse(line) as Command
  chain = chain.then(async () => {
    const reply = await execute(command).catch((error) => ({ error: codeOf(error) }))
    out({ n: command.n, ...reply })
    if (command.cmd === 'stop') process.exit(0)
  })
})
