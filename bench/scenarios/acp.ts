import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { Readable, Writable } from 'node:stream'
import * as ProviderAcp from '@cordis-subagents/provider-acp'
import { BenchModel, host, now, stats, text, type Stats } from '../lib.js'

const AGENT = fileURLToPath(new URL('../fixtures/acp-agent.mjs', import.meta.url))
/** provider-acp's hostile fixture: `slow-exit <ms>` ignores the end of stdin and dies <ms> after SIGTERM. */
const SLOW_EXIT_AGENT = fileURLToPath(new URL('../../packages/provider-acp/tests/fixtures/hostile.mjs', import.meta.url))
const SLOW_DEATH_MS = 500
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

/** A hand-written ACP SDK client on a freshly spawned fixture agent, past `initialize`. */
async function connectHandClient() {
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
  return { sdk, child, exited, connection }
}

/**
 * A minimal hand-written client on the ACP SDK: spawn → initialize → session/new → prompt →
 * the answer (`mark`: the result) → close → the process' exit.
 */
async function handClient(mark: () => void): Promise<void> {
  const { child, exited, connection } = await connectHandClient()
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
  mark()
  if (output !== 'child answer') throw new Error(`hand client: wrong output ${output}`)
  session.dispose()
  connection.close()
  child.stdin!.end()
  await exited
}

/**
 * Per-run latency, each system to two matched end points (issue 42): to the result (the answer
 * in hand: the hand client's prompt answered, our run's `result`), and to the process' exit (the
 * hand client closes stdin and waits for the exit; ours disposes the run, which hands it back at
 * the end of the turn, then waits for the provider's `reaped()`: the process is gone). The floor
 * (an empty node script) has one end point, its exit.
 */
export interface AcpResult { result: Record<string, Stats>; exit: Record<string, Stats>; iterations: number }

export const ACP_SYSTEMS = { floor: 'floor: spawn node (empty script)', hand: 'hand-written ACP SDK client', ours: 'ours: ctx.subagents → acp provider' } as const

export async function acp(options: { iterations: number; warmup: number }): Promise<AcpResult> {
  // One parent delegates every run: lift the tree cap (16 delegations by default) above the run count.
  const h = await host({ model: new BenchModel(() => text('unused')), tools: false, subagents: { maxChildren: 1000 } })
  h.ctx.plugin(ProviderAcp, { name: 'acp', command: process.execPath, args: [AGENT] })
  await h.ctx.lifecycle.flush()
  const provider = h.ctx.subagents.get('acp') as ProviderAcp.AcpProvider
  const parent = h.ctx.agents.create({})
  const ours = async (mark: () => void) => {
    const run = await h.ctx.subagents.delegate('acp', { prompt: 'hello', parent, signal: new AbortController().signal })
    const result = await run.result
    mark()
    await run.dispose()
    await provider.reaped()
    if (result.stopReason !== 'completed' || result.output !== 'child answer') throw new Error(`acp: ${JSON.stringify(result)}`)
  }
  const systems: Record<string, (mark: () => void) => Promise<void>> = {
    [ACP_SYSTEMS.floor]: floor,
    [ACP_SYSTEMS.hand]: handClient,
    [ACP_SYSTEMS.ours]: ours,
  }
  const names = Object.keys(systems)
  const result: Record<string, number[]> = Object.fromEntries(names.filter((k) => k !== ACP_SYSTEMS.floor).map((k) => [k, []]))
  const exit: Record<string, number[]> = Object.fromEntries(names.map((k) => [k, []]))
  try {
    for (let i = -options.warmup; i < options.iterations; i++) {
      for (const name of i % 2 ? [...names].reverse() : names) {
        const t0 = now()
        let t1 = 0
        await systems[name](() => { t1 = now() })
        const t2 = now()
        if (i < 0) continue
        result[name]?.push(t1 - t0)
        exit[name].push(t2 - t0)
      }
    }
    if (h.ctx.subagents.runs().length) throw new Error('acp: live runs left')
  } finally {
    await parent.dispose()
    await h.stop()
  }
  const summary = (samples: Record<string, number[]>) => Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, stats(v)]))
  return { result: summary(result), exit: summary(exit), iterations: options.iterations }
}

export interface HandbackResult { stats: Record<string, Stats>; iterations: number }

/**
 * Hand-back delay: from the agent's end of turn (its wall clock, sent with the answer) to the
 * holder having the result and the run disposed, which is what the subagent tool waits for.
 * A well-behaved agent (exits when stdin closes) against one that ignores stdin (Codex, Claude),
 * and one that also takes 500 ms to die of SIGTERM (the provider's test fixture `slow-exit`):
 * the run is handed back at the end of the turn and the process reaped behind it.
 */
export async function handback(options: { iterations: number; warmup: number }): Promise<HandbackResult> {
  // One parent delegates every run: lift the tree cap (16 delegations by default) above the run count.
  const h = await host({ model: new BenchModel(() => text('unused')), tools: false, subagents: { maxChildren: 1000 } })
  h.ctx.plugin(ProviderAcp, { name: 'well-behaved', command: process.execPath, args: [AGENT, 'timed'] })
  h.ctx.plugin(ProviderAcp, { name: 'ignores-stdin', command: process.execPath, args: [AGENT, 'timed-ignore-stdin'] })
  h.ctx.plugin(ProviderAcp, { name: 'slow-dying', command: process.execPath, args: [SLOW_EXIT_AGENT, 'slow-exit', String(SLOW_DEATH_MS)] })
  await h.ctx.lifecycle.flush()
  const parent = h.ctx.agents.create({})
  const delay = async (provider: string) => {
    const run = await h.ctx.subagents.delegate(provider, { prompt: 'hello', parent, signal: new AbortController().signal })
    const result = await run.result
    await run.dispose()
    const handedBack = performance.timeOrigin + performance.now()
    const ended = Number(/(?:^|\) )ended (\S+)$/.exec(result.output)?.[1])
    if (result.stopReason !== 'completed' || !Number.isFinite(ended)) throw new Error(`handback: ${JSON.stringify(result)}`)
    return handedBack - ended
  }
  const names = ['well-behaved', 'ignores-stdin', 'slow-dying']
  const samples: Record<string, number[]> = {
    'well-behaved (exits at EOF)': [], 'ignores stdin (Codex/Claude-like)': [], [`ignores stdin, dies ${SLOW_DEATH_MS} ms after SIGTERM`]: [],
  }
  const labels = Object.keys(samples)
  try {
    for (let i = -options.warmup; i < options.iterations; i++) {
      const order = i % 2 ? [2, 1, 0] : [0, 1, 2]
      for (const k of order) {
        const ms = await delay(names[k])
        if (i >= 0) samples[labels[k]].push(ms)
      }
    }
    if (h.ctx.subagents.runs().length) throw new Error('handback: live runs left')
  } finally {
    await parent.dispose()
    await h.stop()
    // The processes still dying are reaped by the providers' stop, a lifecycle task.
    await h.ctx.lifecycle.flush()
  }
  return { stats: Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, stats(v)])), iterations: options.iterations }
}

export interface WarmAcpResult {
  /** Time to the result (what the parent's model waits for). */
  result: Record<string, Stats>
  /** Time to the result and the run disposed (what the subagent tool waits for). */
  disposed: Record<string, Stats>
  iterations: number
}

/** A hand-written client on one live, initialized agent process: session/new → prompt → end_turn per call. */
async function liveClient() {
  const { child, exited, connection } = await connectHandClient()
  let ahead: Awaited<ReturnType<ReturnType<typeof connection.agent.buildSession>['start']>> | undefined
  return {
    /** Opens the next run's session now (session/new ahead, as a warm spare of provider-acp does). */
    async open() {
      ahead = await connection.agent.buildSession({ cwd: process.cwd(), mcpServers: [] }).start()
    },
    async run() {
      const session = ahead ?? await connection.agent.buildSession({ cwd: process.cwd(), mcpServers: [] }).start()
      ahead = undefined
      const response = session.prompt([{ type: 'text', text: 'hello' }])
      let output = ''
      for (;;) {
        const next = await session.nextUpdate()
        if (next.kind === 'stop') break
        const update = next.update as { sessionUpdate: string; content?: { text?: string } }
        if (update.sessionUpdate === 'agent_message_chunk') output += update.content?.text ?? ''
      }
      await response
      session.dispose()
      if (output !== 'child answer') throw new Error(`live client: wrong output ${output}`)
    },
    async close() {
      connection.close()
      child.stdin!.end()
      await exited
    },
  }
}

/**
 * Per-run latency of the acp provider with a cold process (the default), a warm spare
 * (`warm: true`: the spare is ready before the run, as it is when delegations are seconds apart)
 * and a reused process (`reuse: true`), against the protocol floor: a hand-written client doing
 * the same session/new → prompt on a live, initialized process (no spawn, no import), and the
 * same client's first session on a process it has just initialized (what a spare is: the agent's
 * code for session/new and prompt has not run yet in it).
 */
export async function warmAcp(options: { iterations: number; warmup: number }): Promise<WarmAcpResult> {
  const h = await host({ model: new BenchModel(() => text('unused')), tools: false })
  h.ctx.plugin(ProviderAcp, { name: 'cold', command: process.execPath, args: [AGENT] })
  h.ctx.plugin(ProviderAcp, { name: 'warm', command: process.execPath, args: [AGENT], warm: true })
  h.ctx.plugin(ProviderAcp, { name: 'reused', command: process.execPath, args: [AGENT], reuse: true, maxSessionsPerProcess: 1000 })
  await h.ctx.lifecycle.flush()
  // A parent per round: the default tree cap (16 delegations per tree) would stop one parent.
  let parent = h.ctx.agents.create({})
  const client = await liveClient()
  const pool = (name: string) => (h.ctx.subagents.get(name) as ProviderAcp.AcpProvider).pool!
  let fresh: Awaited<ReturnType<typeof liveClient>> | undefined
  let warmRuns = 0
  /** Warm runs finished: from the first on, the warm pool keeps a spare. */
  let warmDone = 0
  /**
   * Untimed: a spare is initialized and waiting (between delegations, as in a real conversation).
   * The pool starts spares after its first run (which shows the environment they need).
   */
  const spareReady = async () => {
    if (warmRuns++ === 0) return
    const deadline = now() + 30_000
    while (pool('warm').counts().idle < 1 || pool('warm').counts().stopping > 0) {
      if (now() > deadline) throw new Error(`warm acp: no spare ready after 30 s (${JSON.stringify(pool('warm').counts())})`)
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
  }
  const quiet = async () => {
    const deadline = now() + 30_000
    for (;;) {
      const counts = pool('warm').counts()
      // After its first run the warm pool refills (on a timer): wait until its spare is up.
      if (!counts.starting && !counts.stopping && (warmDone === 0 || counts.idle > 0 || counts.busy > 0)) return
      if (now() > deadline) throw new Error(`warm acp: the warm pool did not settle in 30 s (${JSON.stringify(counts)})`)
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
  }
  const ours = (provider: string) => async (mark: () => void) => {
    const run = await h.ctx.subagents.delegate(provider, { prompt: 'hello', parent, signal: new AbortController().signal })
    const result = await run.result
    mark()
    await run.dispose()
    if (result.stopReason !== 'completed' || result.output !== 'child answer') throw new Error(`warm acp (${provider}): ${JSON.stringify(result)}`)
  }
  const systems: Record<string, { prepare?: () => Promise<void>; run: (mark: () => void) => Promise<void> }> = {
    'protocol floor: hand client, live initialized process (session/new → prompt)': { run: async (mark) => { await client.run(); mark() } },
    'hand client, first session on a freshly initialized process': {
      prepare: async () => { fresh = await liveClient() },
      run: async (mark) => {
        await fresh!.run()
        mark()
        await fresh!.close()
      },
    },
    'hand client, first prompt on a freshly initialized process whose session was opened ahead': {
      prepare: async () => {
        fresh = await liveClient()
        await fresh.open()
      },
      run: async (mark) => {
        await fresh!.run()
        mark()
        await fresh!.close()
      },
    },
    'ours: cold process (default)': { run: ours('cold') },
    'ours: warm spare (warm: true)': {
      prepare: spareReady,
      run: async (mark) => {
        await ours('warm')(mark)
        warmDone++
      },
    },
    'ours: reused process, new session (reuse: true)': { run: ours('reused') },
  }
  const names = Object.keys(systems)
  const result: Record<string, number[]> = Object.fromEntries(names.map((k) => [k, []]))
  const disposed: Record<string, number[]> = Object.fromEntries(names.map((k) => [k, []]))
  try {
    for (let i = -options.warmup; i < options.iterations; i++) {
      await parent.dispose()
      parent = h.ctx.agents.create({})
      for (const name of i % 2 ? [...names].reverse() : names) {
        await systems[name].prepare?.()
        // No spare of the warm pool is being spawned or initialized while another system is timed.
        await quiet()
        const t0 = now()
        let t1 = 0
        await systems[name].run(() => { t1 = now() })
        const t2 = now()
        if (i < 0) continue
        result[name].push(t1 - t0)
        disposed[name].push(t2 - t0)
      }
    }
    if (h.ctx.subagents.runs().length) throw new Error('warm acp: live runs left')
  } finally {
    await client.close()
    await parent.dispose()
    await Promise.all(['cold', 'warm', 'reused'].map((name) => (h.ctx.subagents.get(name) as ProviderAcp.AcpProvider | undefined)?.stop()))
    await h.stop()
  }
  const summary = (samples: Record<string, number[]>) => Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, stats(v)]))
  return { result: summary(result), disposed: summary(disposed), iterations: options.iterations }
}
