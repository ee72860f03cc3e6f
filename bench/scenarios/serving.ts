import { fork, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { Role } from '@a2a-js/sdk'
import { type Client as A2aClient, ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client'
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { CHILD, now, stats, type Stats } from '../lib.js'
import type { ServingSystem } from './serving-server.js'

const SERVER = fileURLToPath(new URL('./serving-server.ts', import.meta.url))

/** A server of serving-server.ts in its own process (the bench's own flags: tsx, the source condition). */
interface Remote { url: string; token: string; cpuUs(): Promise<number>; stop(): Promise<void> }

async function start(system: ServingSystem): Promise<Remote> {
  // SERVING_PROFILE=<system>[,<system>…]: each server named writes a CPU profile to /tmp/prof-<system> (bench/profile/serving.ts).
  const profile = process.env.SERVING_PROFILE?.split(',').includes(system) ? ['--cpu-prof', '--cpu-prof-interval=250', `--cpu-prof-dir=/tmp/prof-${system}`] : []
  const execArgv = [...process.execArgv.filter((arg) => !arg.startsWith('--cpu-prof')), ...profile]
  const child: ChildProcess = fork(SERVER, [system], { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const hello = await new Promise<{ url: string; token: string }>((resolve, reject) => {
    child.once('message', (message) => resolve(message as { url: string; token: string }))
    child.once('exit', (code) => reject(new Error(`serving: ${system} exited with ${code} before it listened`)))
  })
  return {
    ...hello,
    cpuUs: () => new Promise((resolve) => {
      child.once('message', (message) => {
        const { cpu } = message as { cpu: NodeJS.CpuUsage }
        resolve(cpu.user + cpu.system)
      })
      child.send('cpu')
    }),
    stop: () => new Promise((resolve) => {
      child.once('exit', () => resolve())
      child.send('stop')
    }),
  }
}

/** One call of a system's client: resolves once the answer is checked. */
type Call = () => Promise<void>

async function mcpCaller(remote: Remote): Promise<{ call: Call; close(): Promise<void> }> {
  const client = new McpClient({ name: 'bench', version: '1.0.0' })
  const transport = new StreamableHTTPClientTransport(new URL(remote.url), { requestInit: { headers: { Authorization: `Bearer ${remote.token}` } } })
  await client.connect(transport)
  return {
    call: async () => {
      const result = await client.callTool({ name: 'subagent', arguments: { description: 'look something up', prompt: `${CHILD}look something up` } })
      const text = (result.content as Array<{ text?: string }>)[0]?.text ?? ''
      if (result.isError || !text.includes('child answer')) throw new Error(`serving mcp: ${JSON.stringify(result)}`)
    },
    close: async () => {
      await transport.terminateSession().catch(() => {})
      await client.close()
    },
  }
}

async function a2aCaller(remote: Remote): Promise<{ call: Call; close(): Promise<void> }> {
  const fetchImpl: typeof fetch = (input, init = {}) => {
    const headers = new Headers(init.headers)
    headers.set('Authorization', `Bearer ${remote.token}`)
    return fetch(input, { ...init, headers })
  }
  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  }))
  const client: A2aClient = await factory.createFromUrl(remote.url)
  return {
    call: async () => {
      const answer = await client.sendMessage({
        tenant: '', configuration: undefined, metadata: undefined,
        message: {
          messageId: randomUUID(), contextId: '', taskId: '', role: Role.ROLE_USER, metadata: undefined, extensions: [], referenceTaskIds: [],
          parts: [{ content: { $case: 'text', value: 'do the task' }, mediaType: 'text/plain', filename: '', metadata: undefined }],
        },
      })
      if (!JSON.stringify(answer).includes('parent final answer')) throw new Error(`serving a2a: ${JSON.stringify(answer)}`)
    },
    close: async () => {},
  }
}

export interface ServingResult {
  rounds: number
  batch: number
  slices: number
  inFlight: number
  /** Per system: server CPU µs per call (its own process), and calls per second (wall, client to answer). */
  cpuUs: Record<ServingSystem, Stats>
  perSecond: Record<ServingSystem, Stats>
  /** Per protocol, per round: ours ÷ bare (CPU: > 1 is costlier; throughput: < 1 is slower). */
  cpuRatio: Record<Protocol, Stats>
  throughputRatio: Record<Protocol, Stats>
  /** The A/A row: per protocol, per round, twin ÷ bare (two identical bare servers): the finest ratio a run resolves. */
  twinCpuRatio: Record<Protocol, Stats>
  twinThroughputRatio: Record<Protocol, Stats>
  /** The per-round samples behind them, in round order (ours, bare and twin of one round form the pairs). */
  samples: { cpuUs: Record<ServingSystem, number[]>; perSecond: Record<ServingSystem, number[]> }
}

export type Protocol = 'mcp' | 'a2a'

/** Section 12's rounds (bench/single.ts and bench/profile/serving.ts). */
export const SERVING = { rounds: 10, batch: 200, slices: 4, inFlight: 4, warmup: 2 }

/**
 * A round's order: per protocol ours, bare, twin, and every other round all of it reversed, so a bare server's batch
 * is always next to the two it is paired with (ours and its twin) and each comes first as often as last.
 */
const SYSTEMS: ServingSystem[] = ['mcp-ours', 'mcp-bare', 'mcp-twin', 'a2a-ours', 'a2a-bare', 'a2a-twin']

/**
 * serve-mcp and serve-a2a against a bare SDK server running the same agents (serving-server.ts), and a second bare
 * server of each (the A/A row), each server in its own process; the clients (the SDKs' own) run here. Rounds
 * alternate the order; each round sends `batch` calls per system in `slices` turns, `inFlight` at a time, after `warmup`
 * untimed rounds.
 */
export async function serving(options: typeof SERVING): Promise<ServingResult> {
  const systems = SYSTEMS
  const remotes = {} as Record<ServingSystem, Remote>
  const callers = {} as Record<ServingSystem, { call: Call; close(): Promise<void> }>
  const cpu = Object.fromEntries(systems.map((s) => [s, [] as number[]])) as Record<ServingSystem, number[]>
  const rate = Object.fromEntries(systems.map((s) => [s, [] as number[]])) as Record<ServingSystem, number[]>
  try {
    for (const system of systems) {
      remotes[system] = await start(system)
      callers[system] = await (system.startsWith('mcp') ? mcpCaller : a2aCaller)(remotes[system])
    }
    // A round's `batch` calls per system go in `slices` slices, the systems taking turns slice by slice (the order
    // reversed every slice): the two batches of a pair share the machine's load of the same seconds, not of two
    // different ones. A system's sample of the round sums its slices' CPU and wall time.
    const slice = Math.max(1, Math.round(options.batch / options.slices))
    for (let round = -options.warmup; round < options.rounds; round++) {
      const cpuUs = Object.fromEntries(systems.map((s) => [s, 0])) as Record<ServingSystem, number>
      const wallMs = Object.fromEntries(systems.map((s) => [s, 0])) as Record<ServingSystem, number>
      for (let turn = 0; turn < options.slices; turn++) {
        for (const system of (round * options.slices + turn) % 2 ? [...systems].reverse() : systems) {
          const { call } = callers[system]
          const cpu0 = await remotes[system].cpuUs()
          const t0 = now()
          let next = 0
          await Promise.all(Array.from({ length: options.inFlight }, async () => {
            while (next++ < slice) await call()
          }))
          wallMs[system] += now() - t0
          cpuUs[system] += await remotes[system].cpuUs() - cpu0
        }
      }
      if (round < 0) continue
      for (const system of systems) {
        cpu[system].push(cpuUs[system] / (slice * options.slices))
        rate[system].push((slice * options.slices) / (wallMs[system] / 1000))
      }
    }
  } finally {
    for (const system of systems) await callers[system]?.close()
    await Promise.all(Object.values(remotes).map((remote) => remote.stop()))
  }
  const paired = (samples: Record<ServingSystem, number[]>, protocol: Protocol, side: 'ours' | 'twin') =>
    stats(samples[`${protocol}-${side}`].map((value, i) => value / samples[`${protocol}-bare`][i]))
  const byProtocol = (samples: Record<ServingSystem, number[]>, side: 'ours' | 'twin') =>
    ({ mcp: paired(samples, 'mcp', side), a2a: paired(samples, 'a2a', side) })
  return {
    rounds: options.rounds, batch: options.batch, slices: options.slices, inFlight: options.inFlight,
    cpuUs: Object.fromEntries(systems.map((s) => [s, stats(cpu[s])])) as Record<ServingSystem, Stats>,
    perSecond: Object.fromEntries(systems.map((s) => [s, stats(rate[s])])) as Record<ServingSystem, Stats>,
    cpuRatio: byProtocol(cpu, 'ours'),
    throughputRatio: byProtocol(rate, 'ours'),
    twinCpuRatio: byProtocol(cpu, 'twin'),
    twinThroughputRatio: byProtocol(rate, 'twin'),
    samples: { cpuUs: cpu, perSecond: rate },
  }
}
