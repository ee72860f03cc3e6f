/**
 * Where a warm Claude child's hand-over goes (issue 45 item 6), not part of `npm run bench`: the
 * real claude-agent-acp adapter (and the Claude Code CLI it starts per session) against the loopback
 * Messages API fake, driven over ACP by hand (no cordis, no provider-acp), so what it prints is the
 * agent's own cost. Each round opens a fresh process and session as a warm spare would (initialize,
 * session/new, then a pause), then sends PROMPTS prompts in that session, one after the other.
 *
 *   node --import tsx --conditions=cordis-subagents-source bench/profile/claude-first-prompt.ts [rounds] [prompts]
 *
 * Per prompt number, medians over the rounds: the wall time of `session/prompt`, and the CPU the
 * agent's processes spent on it (the adapter, the CLI and any helper they started; Linux
 * `/proc/<pid>/task/<tid>/schedstat`, plus the children they reaped), split at the moment the model
 * request arrived at the fake. CPU is the figure to read on a loaded machine: it is what a quiet
 * machine's wall time is made of, while the wall time also holds the waits for a core.
 *
 * CLAUDE_PROFILE_WARMUP=<text> sends that prompt first in each session, untimed (e.g. `/context`,
 * which the adapter answers without a model call), and reports whether the model's first request
 * then carries it: a warm-up that the model sees changes the child's task, so it is not an option.
 * CLAUDE_PROFILE_ENV='{"NAME":"value"}' adds environment variables for the agent (to try the CLI's
 * switches); CLAUDE_PROFILE_SESSION_META='{…}' is sent as `_meta` of `session/new` (what provider-acp's
 * `sessionMeta` sends), e.g. `{"claudeCode":{"options":{"executableArgs":["--no-lazy"]}}}`.
 * Also printed: how long `session/new` took (the spare's start, off the hand-over's path) and the
 * resident memory of the agent's processes after the prompts.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { fmt, stats } from '../lib.js'
import { startRealAgent } from '../../test/support/real-agents.js'

const ROUNDS = Number(process.argv[2] ?? 5)
const PROMPTS = Number(process.argv[3] ?? 3)
const WARMUP = process.env.CLAUDE_PROFILE_WARMUP
const EXTRA_ENV = JSON.parse(process.env.CLAUDE_PROFILE_ENV ?? '{}') as Record<string, string>
const META = process.env.CLAUDE_PROFILE_SESSION_META
const SESSION_META = META ? { _meta: JSON.parse(META) as unknown } : {}
/** How long a fresh session rests before its first prompt (a spare waits for its run). */
const REST_MS = 2_000
const TICK_MS = 1000 / 100 // USER_HZ of /proc/<pid>/stat on Linux
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function childrenOf(pid: number): number[] {
  const found: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) found.push(Number(entry))
    } catch {
      // Gone meanwhile.
    }
  }
  return found
}

/** The process and its descendants, now. */
function family(pid: number): number[] {
  const all = [pid]
  for (let i = 0; i < all.length; i++) all.push(...childrenOf(all[i]!))
  return all
}

/** CPU milliseconds the processes spent so far: every thread's run time, plus their reaped children's. */
function cpuMs(pids: number[]): number {
  let ms = 0
  for (const pid of pids) {
    try {
      for (const tid of readdirSync(`/proc/${pid}/task`)) ms += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]) / 1e6
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
      ms += (Number(fields[14]) + Number(fields[15])) * TICK_MS // cutime + cstime
    } catch {
      // Gone meanwhile: what it spent is lost, which only lowers the figure.
    }
  }
  return ms
}

/** Newline-delimited JSON-RPC over the agent's stdio; requests from the agent are refused. */
function rpc(child: ChildProcess) {
  let buffer = ''
  let id = 0
  const waiting = new Map<number, (message: { result?: unknown; error?: unknown }) => void>()
  child.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8')
    for (let end = buffer.indexOf('\n'); end >= 0; end = buffer.indexOf('\n')) {
      const message = JSON.parse(buffer.slice(0, end)) as { id?: number; method?: string; result?: unknown; error?: unknown }
      buffer = buffer.slice(end + 1)
      if (message.method !== undefined && message.id !== undefined) {
        child.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'not offered' } })}\n`)
      } else if (message.id !== undefined) {
        waiting.get(message.id)?.(message)
        waiting.delete(message.id)
      }
    }
  })
  return <T>(method: string, params: unknown) => new Promise<T>((resolve, reject) => {
    const n = ++id
    waiting.set(n, (message) => (message.error ? reject(new Error(JSON.stringify(message.error))) : resolve(message.result as T)))
    child.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', id: n, method, params })}\n`)
  })
}

/** SIGTERM to each process, then waits (at most 10 s) until all are gone, so the agent's home can be removed. */
async function stop(pids: number[]): Promise<void> {
  for (const pid of pids) {
    try { process.kill(pid, 'SIGTERM') } catch { /* gone already */ }
  }
  const deadline = performance.now() + 10_000
  while (pids.some((pid) => existsSync(`/proc/${pid}`)) && performance.now() < deadline) await sleep(50)
}

/** Resident memory of the processes (MiB). */
function rssMiB(pids: number[]): number {
  let kib = 0
  for (const pid of pids) {
    try {
      kib += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0)
    } catch {
      // Gone meanwhile.
    }
  }
  return kib / 1024
}

interface Sample { wall: number; cpu: number; toRequest: number }
const opened: number[] = []
const resident: number[] = []
const samples: Sample[][] = Array.from({ length: PROMPTS }, () => [])
let warmupSeen: boolean | undefined
let watched: number[] = []
let cpuAtRequest = 0
const agent = await startRealAgent('claude', (request) => {
  if (request.tools.length) cpuAtRequest = cpuMs(watched)
  return { text: 'the final answer from the loopback model' }
})

try {
  for (let round = 0; round < ROUNDS; round++) {
    const child = spawn(agent.command, agent.args, {
      cwd: agent.home, stdio: ['pipe', 'pipe', 'ignore'], env: { PATH: process.env.PATH ?? '', ...agent.env, ...EXTRA_ENV },
    })
    try {
      const call = rpc(child)
      await call('initialize', { protocolVersion: 1, clientCapabilities: {} })
      const opening = performance.now()
      const { sessionId } = await call<{ sessionId: string }>('session/new', { cwd: agent.home, mcpServers: [], ...SESSION_META })
      opened.push(performance.now() - opening)
      const prompt = (text: string) => call<{ stopReason: string }>('session/prompt', { sessionId, prompt: [{ type: 'text', text }] })
      const firstRequest = agent.model.requests.length
      if (WARMUP) await prompt(WARMUP)
      await sleep(REST_MS)
      watched = family(child.pid!)
      for (let i = 0; i < PROMPTS; i++) {
        const cpuBefore = cpuMs(watched)
        const started = performance.now()
        const { stopReason } = await prompt('Give the final answer.')
        const wall = performance.now() - started
        if (stopReason !== 'end_turn') throw new Error(`prompt ${i + 1} ended ${stopReason}`)
        samples[i]!.push({ wall, cpu: cpuMs(watched) - cpuBefore, toRequest: cpuAtRequest - cpuBefore })
        await sleep(300)
      }
      resident.push(rssMiB(family(child.pid!)))
      if (WARMUP) warmupSeen = (warmupSeen ?? false) || JSON.stringify(agent.model.requests[firstRequest]?.body.messages).includes(WARMUP)
    } finally {
      await stop(family(child.pid!))
    }
  }
} finally {
  await agent.close()
}

const median = (xs: number[]) => fmt(stats(xs).median)
console.log(`claude-agent-acp, ${ROUNDS} fresh sessions${WARMUP ? `, warm-up prompt ${JSON.stringify(WARMUP)}` : ''}; medians (ms):`)
samples.forEach((prompt, i) => {
  console.log(`prompt ${i + 1}: wall ${median(prompt.map((s) => s.wall))}, agent CPU ${median(prompt.map((s) => s.cpu))} ` +
    `(to the model request ${median(prompt.map((s) => s.toRequest))}, after it ${median(prompt.map((s) => s.cpu - s.toRequest))})`)
})
console.log(`session/new: ${median(opened)} ms; resident memory of the agent's processes after the prompts: ${median(resident)} MiB`)
if (WARMUP) console.log(`the model's first request carries the warm-up: ${warmupSeen ? 'yes' : 'no'}`)
console.log(`model endpoints the fake does not serve: ${agent.model.unknown.length ? agent.model.unknown.join(', ') : 'none'}`)
