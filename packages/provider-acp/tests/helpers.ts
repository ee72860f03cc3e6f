import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Context, Logger } from 'cordis'
import { expect } from 'chai'
import ToolRegistry from '@cordis-subagents/tools'
import { AgentRuntime, type Agent } from '@cordis-subagents/agent'
import type { ProviderStartRequest, SubagentUpdate } from '@cordis-subagents/subagents-service'
import { type AcpProvider, createAcpProvider, liveProcessGroups, type AcpProviderOptions as ProviderOptions } from '../src/index.js'

const FIXTURE = fileURLToPath(new URL('./fixtures/agent.mjs', import.meta.url))
const FIXTURE_DIR = fileURLToPath(new URL('./fixtures/', import.meta.url))
export const HOSTILE = fileURLToPath(new URL('./fixtures/hostile.mjs', import.meta.url))
const GRANDCHILD_MARK = 'acp-fixture-grandchild'

/**
 * Other test runs (and benchmarks) may run these fixtures at the same time. Every process this
 * test process starts inherits this variable (it is not credential-shaped), grandchildren too,
 * so the leftover check can tell ours from theirs.
 */
const OWNER = `ACP_FIXTURE_OWNER=${process.pid}`
const markOwner = () => {
  process.env.ACP_FIXTURE_OWNER = String(process.pid)
}
markOwner()
// @cordisjs/loader puts process.env back to its own import-time copy whenever a loader app starts,
// which drops this mark when a spec of another package (imported earlier) starts one in the same
// mocha run: set it again before every test (a root hook, cheap).
beforeEach(markOwner)

function ours(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(OWNER)
  } catch {
    return false // gone, or not readable: not a process we started
  }
}

/** The variables the issue report saw reach a child, with values shaped like the real ones. */
export const LEAKED: Record<string, string> = {
  GITHUB_PAT: 'ghpat-value-0001', GH_PAT: 'ghpat-value-0002',
  DATABASE_URL: 'postgres://app:db-pass-0003@db.internal:5432/app', REDIS_URL: 'redis://:redis-pass-0004@cache:6379',
  NPM_AUTH: 'npm-auth-0005', npm_config__auth: 'npm-config-auth-0006', DB_PASS: 'db-pass-value-0007',
  SMTP_PASS: 'smtp-pass-0008', MYSQL_PWD: 'mysql-pwd-0009', DB_PASSWD: 'db-passwd-0010',
  SSH_AUTH_SOCK: '/tmp/ssh-agent-0011.sock', DOCKER_AUTH_CONFIG: '{"auths":{"x":"docker-0012"}}',
  SENTRY_DSN: 'https://sentry-key-0013@o1.ingest.sentry.io/1', SLACK_WEBHOOK_URL: 'https://hooks.slack.com/services/slack-0014',
  CI_JOB_JWT: 'ci-job-jwt-0015', COOKIE: 'session=cookie-0016',
  OPENAI_API_KEY: 'sk-openai-0017', GH_TOKEN: 'gh-token-0018', AWS_SECRET_ACCESS_KEY: 'aws-secret-0019',
}

/**
 * Small graces keep the suite fast. `ACP_FIXTURE_OWNER` is passed through by name (the default
 * env policy inherits only core variables), so the leftover check can tell ours from theirs.
 */
// startupTimeout is generous: a loaded 2-core machine can take seconds to start eight Node agents at once,
// and no test here measures startup time (the ones about startupTimeout set their own).
export const FAST = {
  cancelGrace: 200, killGrace: 200, startupTimeout: 60_000, env: { ACP_FIXTURE_OWNER: true } as Record<string, string | boolean>,
}

export const logger = new Logger('acp-test')

export function fixtureArgs(mode: string, arg?: string): string[] {
  return arg === undefined ? [FIXTURE, mode] : [FIXTURE, mode, arg]
}

/** Providers the helpers made, so a test can wait for the processes they stop after the hand-back. */
const made = new Set<AcpProvider>()

function track(provider: AcpProvider): AcpProvider {
  made.add(provider)
  return provider
}

/**
 * Waits until every process of a finished run is gone. A run is handed back at the end of its
 * turn and its process is stopped in the background; the provider (`reaped()`, `stop()`) waits for it.
 */
export async function reapAll(): Promise<void> {
  await Promise.all([...made].map((provider) => provider.reaped()))
}

/** The provider over a fixture (`options.env` adds to FAST's). */
export function fixtureProvider(mode: string, arg?: string, options: Partial<ProviderOptions> = {}) {
  return track(createAcpProvider({
    command: process.execPath, args: fixtureArgs(mode, arg), logger, ...FAST, ...options,
    env: { ...FAST.env, ...options.env },
  }))
}

/** The provider over the hostile fixture (tests/fixtures/hostile.mjs). */
export function hostileProvider(mode: string, arg?: string, options: Partial<ProviderOptions> = {}) {
  return track(createAcpProvider({
    command: process.execPath, args: arg === undefined ? [HOSTILE, mode] : [HOSTILE, mode, arg], logger, ...FAST, ...options,
    env: { ...FAST.env, ...options.env },
  }))
}

export interface Heartbeat {
  /** Longest busy gap between two ticks (ms): how long the loop was blocked by work (waiting for a core does not count). */
  maxGap(): number
  /** Highest RSS growth over the baseline seen at a tick (bytes). */
  peakRssGrowth(): number
  stop(): void
}

/** A 10 ms interval that records the longest gap between ticks and the RSS peak. */
export function heartbeat(): Heartbeat {
  const baseline = process.memoryUsage.rss()
  let last = performance.now()
  let lastCpu = process.cpuUsage()
  let gap = 0
  let peak = 0
  // How long the loop was *busy* between two ticks: the wall gap, but never more than the CPU the
  // process used meanwhile. A loop blocked by our code burns CPU for the whole gap; a loop that only
  // waited for a core (a loaded machine, `stress-ng` beside the suite) did not, and is not counted.
  const busy = (now: number) => Math.min(now - last, cpuMsSince(lastCpu))
  const timer = setInterval(() => {
    const now = performance.now()
    gap = Math.max(gap, busy(now))
    last = now
    lastCpu = process.cpuUsage()
    peak = Math.max(peak, process.memoryUsage.rss() - baseline)
  }, 10)
  return {
    maxGap: () => Math.max(gap, busy(performance.now())),
    peakRssGrowth: () => peak,
    stop: () => clearInterval(timer),
  }
}

function cpuMsSince(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since)
  return (used.user + used.system) / 1000
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

interface LogRecord {
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
      // cordis does not await dispose listeners; the provider's stop (its pending reaps) is a lifecycle task.
      await ctx.lifecycle.flush()
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

/** Waits (polling every 10 ms) until `condition()` holds; fails naming `what` after the bound. */
export { eventually as until } from '@cordis-subagents/test-support'

export async function rejection(promise: Promise<unknown>): Promise<Error & { code?: string }> {
  try {
    await promise
  } catch (error) {
    return error as Error & { code?: string }
  }
  throw new Error('expected the promise to reject')
}
