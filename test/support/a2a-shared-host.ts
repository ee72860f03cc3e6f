// One serve-a2a host of a shared deployment, as a real process (run with tsx) for
// test/a2a-host-failure.spec.ts: tools, agents with a scripted model, serve-a2a with `shared` on
// PostgreSQL and `askParent`. Configured by the environment:
//   HOST_NAME, PG_URL, SCHEMA, LEASE_MS, TOKEN, CALL_LOG (every model call is appended there as
//   `<host>\t<job>\t<what>`, so a test counts calls per task across process deaths).
// Prints `READY <url>` once it serves; a line `stats` on stdin prints `STATS {"parked":n,"running":n}`;
// it stops cleanly when stdin ends. The model, by the turn's first user message:
//   `[ask]`   asks `Which colour?` (ask_parent), then answers `painted <answer>` (holds first when the
//             answer says [hold] and no message came after it; answers `painted <answer>, then <message>` after one);
//   `[hold]`  holds while the last user message says [hold] (until aborted), then answers `finished: <last message>`;
//   otherwise answers `done`.
import { appendFileSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { Context, Logger } from 'cordis'
import Tools from '@cordis-subagents/tools'
import AgentRuntime, { type GenerateRequest, ScriptedModel, type ScriptedResponse } from '@cordis-subagents/agent'
import A2aServer from '@cordis-subagents/serve-a2a'

Logger.targets.splice(0, Logger.targets.length)
const env = process.env
const HOST = env.HOST_NAME!
const print = (line: string) => process.stdout.write(`${line}\n`)

const users = (request: GenerateRequest) => request.messages.filter((m) => m.role === 'user').map((m) => m.content)

function respond(request: GenerateRequest): Promise<ScriptedResponse> | ScriptedResponse {
  const all = users(request)
  const first = all[0] ?? ''
  const last = all.at(-1) ?? ''
  const job = /\[job:([\w-]{1,64})\]/.exec(first)?.[1] ?? '-'
  const answerAt = request.messages.findIndex((m) => m.role === 'tool' && m.name === 'ask_parent')
  const answer = answerAt >= 0 ? request.messages[answerAt] : undefined
  const after = answer ? request.messages.slice(answerAt + 1).filter((m) => m.role === 'user').map((m) => m.content) : []
  const asking = answer ? (answer.content.includes('[hold]') && !after.length ? 'hold' : 'finish') : 'ask'
  const what = first.includes('[ask]') ? asking : last.includes('[hold]') ? 'hold' : `reply:${last}`
  appendFileSync(env.CALL_LOG!, `${HOST}\t${job}\t${what}\n`)
  if (what === 'ask') return { toolCalls: [{ name: 'ask_parent', input: { question: 'Which colour?' } }] }
  if (what === 'finish') return { text: `painted ${answer!.content}${after.length ? `, then ${after.join(' ')}` : ''}` }
  if (what === 'hold') {
    return new Promise((_, reject) => request.signal.addEventListener('abort', () => reject(request.signal.reason), { once: true }))
  }
  return { text: first.includes('[hold]') ? `finished: ${last}` : 'done' }
}

const ctx = new Context()
ctx.plugin(Tools)
ctx.plugin(AgentRuntime, { model: 'script' })
ctx.plugin({
  name: 'model',
  inject: ['agents'],
  apply: (ctx: Context) => void ctx.agents.registerModel('script', new ScriptedModel(respond, { usage: { inputTokens: 10, outputTokens: 5 } })),
})
ctx.plugin(A2aServer, {
  tokens: [env.TOKEN!],
  askParent: true,
  shared: { url: env.PG_URL!, schema: env.SCHEMA!, hostName: HOST, leaseMs: Number(env.LEASE_MS) },
} as never)
await ctx.start()
await ctx.lifecycle.flush()
const server = ctx.a2aServer
if (!server?.url) throw new Error('the A2A server did not start')
print(`READY ${server.url}`)

const input = createInterface({ input: process.stdin })
input.on('line', (line) => {
  if (line.trim() === 'stats') print(`STATS ${JSON.stringify({ parked: server.parkedTasks, running: server.runningTasks })}`)
})
input.on('close', () => void ctx.stop().then(() => process.exit(0)))
