// The scripted model of the durable schedule host (test/support/durable-schedule-host.ts) and its
// append-only log. Every model call, `subagent/start`, `subagent/end` and durable settle is one JSON
// line written with appendFileSync, so the log survives a SIGKILL and orders events across the
// host processes of one schedule (they run one after another on one file).
//
// Prompts name their task: a root's first message is `ROOT T3 mode=answer kind=ask`, its child's
// `T3 ask: …`. A model call whose messages hold no task prompt is logged with `who: '?'`: a child
// that lost its transcript.
import { appendFileSync } from 'node:fs'
import type { GenerateRequest, Message, ScriptedResponse } from '@cordis-subagents/agent'

export type Mode = 'answer' | 'escalate' | 'bg'
export type Kind = 'finish' | 'ask' | 'hang'

export type LogEntry =
  | { k: 'call'; pid: number; who: string; last: string; answers: string[] }
  | { k: 'start'; pid: number; runId: string; task: string }
  | { k: 'end'; pid: number; runId: string; task: string; stopReason: string; output: string }
  | { k: 'durable'; pid: number; runId: string; what: 'settled' | 'parked' }
  /** The host begins a clean stop: what ends after it (parked and running runs disposed by the stop) did not settle before it. */
  | { k: 'stopping'; pid: number }

const TOOL: Record<Mode, string> = { answer: 'subagent', escalate: 'subagent_esc', bg: 'subagent_bg' }
export const rootPrompt = (task: string, mode: Mode, kind: Kind) => `ROOT ${task} mode=${mode} kind=${kind}`
const childPrompt = (task: string, kind: Kind) => `${task} ${kind}: do the task`
const childQuestion = (task: string) => `${task} question?`
/** What a child that asked answers once it has `answer`. */
const answeredOutput = (task: string, answer: string) => `${task} got ${answer}`
const finishedOutput = (task: string) => `${task} result`
const resumedOutput = (task: string, message: string) => `${task} resumed with ${message}`

export function logTo(file: string): (entry: Record<string, unknown> & { k: LogEntry['k'] }) => void {
  return (entry) => appendFileSync(file, `${JSON.stringify({ ...entry, pid: process.pid })}\n`)
}

const text = (message: Message) => String((message as { content?: unknown }).content ?? '')
const users = (request: GenerateRequest) => request.messages.filter((m) => m.role === 'user').map(text)

/** The root's parent-model replies the harness has not sent yet: task → the model call waiting for it. */
interface ReplyDesk {
  wait(task: string, signal: AbortSignal): Promise<string>
}

/** `never` for a hanging child: blocks until its turn is aborted. */
const never = (signal: AbortSignal) => new Promise<never>((_, reject) => {
  if (signal.aborted) reject(signal.reason)
  signal.addEventListener('abort', () => reject(signal.reason), { once: true })
})

export interface ModelHooks {
  log: ReturnType<typeof logTo>
  desk: ReplyDesk
  /** Called when a `hang` child's first turn reaches its model (it now hangs until aborted). */
  hanging(task: string): void
}

export function respond(hooks: ModelHooks, request: GenerateRequest): ScriptedResponse | Promise<ScriptedResponse> {
  const said = users(request)
  const root = said.findLast((m) => m.startsWith('ROOT '))
  if (root) return respondRoot(hooks, request, root)
  const first = said[0] ?? ''
  const match = /^(T\d+) (finish|ask|hang):/.exec(first)
  const last = said.at(-1) ?? ''
  const answers = request.messages.filter((m) => m.role === 'tool' && m.name === 'ask_parent').map(text)
  hooks.log({ k: 'call', who: match?.[1] ?? '?', last: last.slice(0, 200), answers })
  if (!match) return { text: `lost my task; I only see ${JSON.stringify(last.slice(0, 80))}` }
  const [, task, kind] = match
  if (kind === 'finish') return { text: finishedOutput(task) }
  if (kind === 'ask') return answers.length ? { text: answeredOutput(task, answers.at(-1)!) } : { toolCalls: [{ name: 'ask_parent', input: { question: childQuestion(task) } }] }
  if (said.length > 1 && last !== first) return { text: resumedOutput(task, last) }
  hooks.hanging(task)
  return never(request.signal)
}

function respondRoot(hooks: ModelHooks, request: GenerateRequest, prompt: string): ScriptedResponse | Promise<ScriptedResponse> {
  const [, task, modeWord, kindWord] = prompt.split(' ')
  const mode = modeWord.slice('mode='.length) as Mode
  const kind = kindWord.slice('kind='.length) as Kind
  hooks.log({ k: 'call', who: `R${task.slice(1)}`, last: prompt, answers: [] })
  const start = request.messages.findLastIndex((m) => m.role === 'user' && text(m) === prompt)
  const turn = request.messages.slice(start + 1)
  if (!turn.length) return { toolCalls: [{ name: TOOL[mode], input: { description: task, prompt: childPrompt(task, kind) } }] }
  const latest = text(turn.at(-1)!)
  const handle = /subagent_reply \{ "handle": "([^"]+)"/.exec(latest)?.[1]
  if (handle && latest.includes('asks you a question')) {
    return hooks.desk.wait(task, request.signal).then((answer) => ({ toolCalls: [{ name: 'subagent_reply', input: { handle, answer } }] }))
  }
  if (latest.startsWith('Started background subagent')) return { text: `${task} waits for its background child` }
  return { text: `${task} root saw: ${latest.slice(0, 400)}` }
}
