import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { Readable, Writable } from 'node:stream'
import * as ProviderAcp from '@cordis-subagents/provider-acp'
import { BenchModel, host, now, stats, text, type Stats } from '../lib.js'

const AGENT = fileURLToPath(new URL('../fixtures/acp-agent.mjs', import.meta.url))
const EMPTY = fileURLToPath(new URL('../fixtures/empty.mjs', import.meta.url))

function exitOf(child: ReturnType<typeof spawn>): Promise<void> {
  return new Promise((resolve, reject) => {
    child.once('exit', () => resolve())
    child.once('error', reject)
  })
}

/** Floor: spawn `node` with an empty script and wait for it to exit. */
async function floor(): Promise<void> {
  const child = spawn(process.execPath, [EMPTY], { stdio: ['pipe', 'pipe', 'pipe'] })
  await exitOf(child)
}

/** A minimal hand-written client on the ACP SDK: spawn → initialize → session/new → prompt → close → exit. */
async function handClient(): Promise<void> {
  const sdk = await import('@agentclientprotocol/sdk')
  const child = spawn(process.execPath, [AGENT], { stdio: ['pipe', 'pipe', 'pipe'] })
  const exited = exitOf(child)
  const connection = sdk.client({ name: 'hand' }).connect(sdk.ndJsonStream(
    Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>,
    Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>,
  ))
  await connection.agent.request(sdk.methods.agent.initialize, {
    protocolVersion: 1,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
  })
  const session = await connection.agent.buildSession({ cwd: process.cwd(), mcpServers: [] }).start()
  const response = session.prompt([{ type: 'text', text: 'hello' }])
  let output = ''
  for (;;) {
    const next = await session.nextUpdate()
    if (next.kind === 'stop') break
    const update = next.update as { sessionUpdate: string; content?: { text?: string } }
    if (update.sessionUpdate === 'agent_message_chunk') output += update.content?.text ?? ''
  }
  await response
  if (output !== 'child answer') throw new Error(`hand client: wrong output ${output}`)
  session.dispose()
  connection.close()
  child.stdin!.end()
  await exited
}

export interface AcpResult { stats: Record<string, Stats>; iterations: number }

export async function acp(options: { iterations: number; warmup: number }): Promise<AcpResult> {
  const h = await host({ model: new BenchModel(() => text('unused')), tools: false })
  h.ctx.plugin(ProviderAcp, { name: 'acp', command: process.execPath, args: [AGENT] })
  await h.ctx.lifecycle.flush()
  const parent = h.ctx.agents.create({})
  const ours = async () => {
    const run = await h.ctx.subagents.delegate('acp', { prompt: 'hello', parent, signal: new AbortController().signal })
    const result = await run.result
    await run.dispose()
    if (result.stopReason !== 'completed' || result.output !== 'child answer') throw new Error(`acp: ${JSON.stringify(result)}`)
  }
  const systems: Record<string, () => Promise<void>> = {
    'floor: spawn node (empty script)': floor,
    'hand-written ACP SDK client': handClient,
    'ours: ctx.subagents → acp provider': ours,
  }
  const samples: Record<string, number[]> = Object.fromEntries(Object.keys(systems).map((k) => [k, []]))
  try {
    for (let i = -options.warmup; i < options.iterations; i++) {
      const names = Object.keys(systems)
      for (const name of i % 2 ? names.reverse() : names) {
        const t0 = now()
        await systems[name]()
        if (i >= 0) samples[name].push(now() - t0)
      }
    }
    if (h.ctx.subagents.runs().length) throw new Error('acp: live runs left')
  } finally {
    await parent.dispose()
    await h.stop()
  }
  return { stats: Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, stats(v)])), iterations: options.iterations }
}

export interface HandbackResult { stats: Record<string, Stats>; iterations: number }

/**
 * Hand-back delay: from the agent's end of turn (its wall clock, sent with the answer) to the
 * holder having the result and the run disposed, which is what the subagent tool waits for.
 * A well-behaved agent (exits when stdin closes) against one that ignores stdin (Codex, Claude).
 */
export async function handback(options: { iterations: number; warmup: number }): Promise<HandbackResult> {
  const h = await host({ model: new BenchModel(() => text('unused')), tools: false })
  h.ctx.plugin(ProviderAcp, { name: 'well-behaved', command: process.execPath, args: [AGENT, 'timed'] })
  h.ctx.plugin(ProviderAcp, { name: 'ignores-stdin', command: process.execPath, args: [AGENT, 'timed-ignore-stdin'] })
  await h.ctx.lifecycle.flush()
  const parent = h.ctx.agents.create({})
  const delay = async (provider: string) => {
    const run = await h.ctx.subagents.delegate(provider, { prompt: 'hello', parent, signal: new AbortController().signal })
    const result = await run.result
    await run.dispose()
    const handedBack = performance.timeOrigin + performance.now()
    const ended = Number(/^ended (\S+)$/.exec(result.output)?.[1])
    if (result.stopReason !== 'completed' || !Number.isFinite(ended)) throw new Error(`handback: ${JSON.stringify(result)}`)
    return handedBack - ended
  }
  const names = ['well-behaved', 'ignores-stdin']
  const samples: Record<string, number[]> = { 'well-behaved (exits at EOF)': [], 'ignores stdin (Codex/Claude-like)': [] }
  const labels = Object.keys(samples)
  try {
    for (let i = -options.warmup; i < options.iterations; i++) {
      const order = i % 2 ? [1, 0] : [0, 1]
      for (const k of order) {
        const ms = await delay(names[k])
        if (i >= 0) samples[labels[k]].push(ms)
      }
    }
    if (h.ctx.subagents.runs().length) throw new Error('handback: live runs left')
  } finally {
    await parent.dispose()
    await h.stop()
  }
  return { stats: Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, stats(v)])), iterations: options.iterations }
}
