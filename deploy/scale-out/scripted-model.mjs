// The scale-out deployment's model: the quick start's offline demo model (its `respond`, the same
// scripted answers over the workspace tools), plus what the deployment tests need at this edge:
// - every model call is appended to SCALE_OUT_CALL_LOG as `<host>\t<job>\t<step>` (the job is the
//   `[job:<id>]` tag of the prompt; step 1 = a new run), so a test counts executions per host;
// - a prompt with `[hold]` waits until its run is aborted (at most SCALE_OUT_HOLD_MS, default 60 s);
//   `[wait:<ms>]` makes each of its model calls take that long (at most the same bound);
// - a prompt with `[loop]` calls list_files forever (only a budget or maxSteps stops it);
// - a prompt with `[read:<path>]` calls read_file on that path and answers with what it returned.
// Plain JavaScript: the hosts load it by path, without a build step of its own.
import { appendFileSync } from 'node:fs'
import { ScriptedModel } from '@cordis-subagents/agent'
import { respond } from '@cordis-subagents/quickstart/demo-model'

export const name = 'scale-out-model'
export const inject = ['agents']

const HOST = process.env.SCALE_OUT_HOST_NAME || 'host'
const LOG = process.env.SCALE_OUT_CALL_LOG
const DELAY = Number(process.env.SCALE_OUT_MODEL_DELAY ?? 20)
const HOLD = Number(process.env.SCALE_OUT_HOLD_MS ?? 60_000)

export function apply(ctx) {
  ctx.agents.registerModel('scale-out', new ScriptedModel(async (request) => {
    const prompt = lastUserText(request.messages)
    const job = /\[job:([\w-]{1,64})\]/.exec(prompt)?.[1] ?? '-'
    if (LOG) appendFileSync(LOG, `${HOST}\t${job}\t${stepOf(request.messages)}\n`)
    const wait = Number(/\[wait:(\d{1,6})\]/.exec(prompt)?.[1] ?? NaN)
    if (prompt.includes('[hold]')) await sleep(HOLD, request.signal)
    else if (wait >= 0) await sleep(Math.min(wait, HOLD), request.signal)
    else if (DELAY) await sleep(DELAY, request.signal)
    const read = /\[read:([^\]]{1,200})\]/.exec(prompt)?.[1]
    const reply = prompt.includes('[loop]')
      ? { text: 'Looking again.', toolCalls: [{ name: 'list_files', input: { path: '.' } }] }
      : read ? readReply(request.messages, read) : respond(request)
    return { ...reply, usage: { inputTokens: 40, outputTokens: 10 } }
  }))
}

/** `[read:<path>]`: read_file first, then the result as the answer (`read: <content>` or `refused: <error>`). */
function readReply(messages, path) {
  const last = messages.at(-1)
  if (last?.role !== 'tool') return { toolCalls: [{ name: 'read_file', input: { path } }] }
  return { text: `${last.isError ? 'refused' : 'read'}: ${last.content}` }
}

function lastUserText(messages) {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i].role === 'user') return messages[i].content
  return ''
}

/** 1 for the first model call of a turn, then one more per call. */
function stepOf(messages) {
  let step = 1
  for (let i = messages.length - 1; i >= 0 && messages[i].role !== 'user'; i--) if (messages[i].role === 'assistant') step++
  return step
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason)
    const timer = setTimeout(() => { signal.removeEventListener('abort', onAbort); resolve() }, ms)
    const onAbort = () => { clearTimeout(timer); reject(signal.reason) }
    signal.addEventListener('abort', onAbort, { once: true })
  })
}
