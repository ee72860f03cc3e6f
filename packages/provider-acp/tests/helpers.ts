import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Context, Logger } from 'cordis'
import { expect } from 'chai'
import ToolRegistry from '@cordis-subagents/tools'
import { AgentRuntime, type Agent } from '@cordis-subagents/agent'
import type { ProviderStartRequest, SubagentUpdate } from '@cordis-subagents/subagents-service'
import { createAcpProvider, liveProcessGroups, type ProviderOptions } from '../src/index.js'

export const FIXTURE = fileURLToPath(new URL('./fixtures/agent.mjs', import.meta.url))
export const FIXTURE_DIR = fileURLToPath(new URL('./fixtures/', import.meta.url))
export const GRANDCHILD_MARK = 'acp-fixture-grandchild'

/**
 * Other test runs (and benchmarks) may run these fixtures at the same time. Every process this
 * test process starts inherits this variable (it is not credential-shaped), grandchildren too,
 * so the leftover check can tell ours from theirs.
 */
const OWNER = `ACP_FIXTURE_OWNER=${process.pid}`
process.env.ACP_FIXTURE_OWNER = String(process.pid)

function ours(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(OWNER)
  } catch {
    return false // gone, or not readable: not a process we started
  }
}

/** Small graces keep the suite fast. */
export const FAST = { cancelGrace: 200, killGrace: 200, startupTimeout: 5000 }

export const logger = new Logger('acp-test')

export function fixtureArgs(mode: string, arg?: string): string[] {
  return arg === undefined ? [FIXTURE, mode] : [FIXTURE, mode, arg]
}

/**
 * The provider over a fixture. `ACP_FIXTURE_OWNER` is passed through by name (the default env
 * policy inherits only core variables), so the leftover check can still tell ours from theirs.
 */
export function fixtureProvider(mode: string, arg?: string, options: Partial<ProviderOptions> = {}) {
  return createAcpProvider({
    command: process.execPath, args: fixtureArgs(mode, arg), logger, ...FAST, ...options,
    env: { ACP_FIXTURE_OWNER: true, ...options.env },
  })
}

/** A stand-in parent for direct provider calls (the provider reads id, depth and cwd). */
export function fakeParent(cwd = process.cwd(), depth = 0): Agent {
  return { id: 'parent-1', depth, cwd } as unknown as Agent
}

export function request(overrides: Partial<ProviderStartRequest> = {}): ProviderStartRequest & { updates: SubagentUpdate[] } {
  const updates: SubagentUpdate[] = []
  return {
    prompt: 'Do the task.',
    parent: fakeParent(),
    signal: new AbortController().signal,
    runId: 'run-1',
    depth: 1,
    onUpdate: (update) => updates.push(update),
    ...overrides,
    updates,
  }
}

export interface LogRecord {
  name: string
  type: string
  content: string
}

export interface Harness {
  ctx: Context
  /** Every record the loggers wrote (debug included), in order; not printed. */
  logs: LogRecord[]
  errors: unknown[]
  stop(): Promise<void>
}

/** A started Context with the real ctx.tools and ctx.agents (for real parent Agents); logs captured. */
export async function harness(): Promise<Harness> {
  const logs: LogRecord[] = []
  const saved = Logger.targets.splice(0, Logger.targets.length, {
    levels: { base: 3 },
    record(record) {
      logs.push({ name: record.name, type: record.type, content: record.content })
    },
  })
  const ctx = new Context()
  const errors: unknown[] = []
  ctx.on('internal/error', (error) => { errors.push(error) })
  ctx.plugin(ToolRegistry)
  ctx.plugin(AgentRuntime)
  await ctx.start()
  let stopped = false
  return {
    ctx,
    logs,
    errors,
    async stop() {
      if (stopped) return
      stopped = true
      await ctx.stop()
      Logger.targets.splice(0, Logger.targets.length, ...saved)
    },
  }
}

interface PsEntry {
  pid: number
  pgid: number
  stat: string
  args: string
}

function ps(): PsEntry[] {
  const out = execFileSync('ps', ['-eo', 'pid=,pgid=,stat=,args='], { encoding: 'utf8' })
  return out.split('\n').filter(Boolean).map((line) => {
    const match = /^\s*(\d+)\s+(\d+)\s+(\S+)\s+(.*)$/.exec(line)!
    return { pid: Number(match[1]), pgid: Number(match[2]), stat: match[3], args: match[4] }
  })
}

/** Live (non-zombie) fixture processes this test process started: agents, grandchildren, hosts. */
export function fixtureProcesses(): PsEntry[] {
  return ps().filter((entry) => !entry.stat.startsWith('Z')
    && (entry.args.includes(FIXTURE_DIR) || entry.args.includes(GRANDCHILD_MARK))
    && ours(entry.pid))
}

/** Live (non-zombie) members of a process group. */
export function groupMembers(pgid: number): PsEntry[] {
  return ps().filter((entry) => entry.pgid === pgid && !entry.stat.startsWith('Z'))
}

export function isAlive(pid: number): boolean {
  return ps().some((entry) => entry.pid === pid && !entry.stat.startsWith('Z'))
}

/**
 * After every test: no fixture process may be left. Leftovers are killed (so one failure does
 * not cascade) and reported as a failure.
 */
export function assertNoLeftovers() {
  const left = fixtureProcesses()
  for (const entry of left) {
    try {
      process.kill(entry.pid, 'SIGKILL')
    } catch {
      // gone meanwhile
    }
  }
  expect(left.map((entry) => `${entry.pid} ${entry.args}`), 'fixture processes left behind').to.deep.equal([])
  expect(liveProcessGroups(), 'process groups still registered').to.deep.equal([])
}

export function sleep(ms: number) {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

export async function rejection(promise: Promise<unknown>): Promise<Error & { code?: string }> {
  try {
    await promise
  } catch (error) {
    return error as Error & { code?: string }
  }
  throw new Error('expected the promise to reject')
}
