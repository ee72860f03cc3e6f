// Root hooks for the whole suite: a leak audit that fails the run when a test leaves
// child processes, active handles or process-level listeners behind.
import { execFileSync } from 'node:child_process'
import { Logger } from 'cordis'
import { FIXTURE_PID_ENV } from './fixture-pid.js'

// Many tests load bad configs on purpose; cordis would print each expected error with its stack.
// Keep the terminal for mocha's report (tests that read log lines install their own targets).
// TEST_LOGS=1 shows the logs.
if (!process.env.TEST_LOGS) Logger.targets.splice(0, Logger.targets.length)

type Resource = string

function activeResources(): Resource[] {
  // Timers and sockets the runner itself keeps (stdout/stderr pipes, TTYs) are in the baseline.
  return process.getActiveResourcesInfo()
}

function childProcesses(): string[] {
  try {
    const out = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(process.pid)], { encoding: 'utf8' })
    return out.split('\n').map((line) => line.trim()).filter((line) => line && !line.includes(' ps -o '))
  } catch {
    return [] // ps exits 1 when there are no children
  }
}

function countBy(list: string[]): Map<string, number> {
  const counts = new Map<string, number>()
  for (const item of list) counts.set(item, (counts.get(item) ?? 0) + 1)
  return counts
}

/**
 * Listeners on `process` (exit, signals, warnings...). Our plugins may add some while they own
 * resources (the ACP provider's safety net that kills live process groups on exit/signals); each
 * must be gone once the last resource is released. Counted per event so a leak of one listener shows.
 */
function processListeners(): string[] {
  const list: string[] = []
  for (const event of process.eventNames()) {
    const count = process.listenerCount(event)
    for (let i = 0; i < count; i++) list.push(`process.on(${String(event)})`)
  }
  return list
}

let baseline: Map<string, number>
let listenerBaseline: Map<string, number>

/**
 * tsx compiles TypeScript through esbuild's long-lived service process, which keeps a child and
 * a timer for the rest of the run. Start it before the baseline so it is not reported as a leak.
 */
async function warmUpCompiler() {
  try {
    const esbuild = await import('esbuild')
    await esbuild.transform('export const warm = 1', { loader: 'ts' })
  } catch {
    // No esbuild here: nothing to warm up.
  }
}

function isCompilerService(line: string): boolean {
  return /esbuild\S* --service=/.test(line)
}

/** The run's own PostgreSQL (./test-postgres.ts), stopped after this audit by the global teardown. */
function isFixtureServer(line: string): boolean {
  const pid = process.env[FIXTURE_PID_ENV]
  return pid !== undefined && line.startsWith(`${pid} `)
}

function excess(now: Map<string, number>, base: Map<string, number>): string[] {
  const extra: string[] = []
  for (const [kind, count] of now) {
    const over = count - (base.get(kind) ?? 0)
    if (over > 0) extra.push(`${kind} x${over}`)
  }
  return extra
}

export const mochaHooks = {
  async beforeAll() {
    await warmUpCompiler()
    baseline = countBy(activeResources())
    listenerBaseline = countBy(processListeners())
  },
  async afterAll(this: Mocha.Context) {
    // Give sockets and exited children a moment to be released by the event loop.
    let leaked: string[] = []
    let listeners: string[] = []
    let children: string[] = []
    for (let attempt = 0; attempt < 20; attempt++) {
      leaked = excess(countBy(activeResources()), baseline)
      listeners = excess(countBy(processListeners()), listenerBaseline)
      children = childProcesses().filter((line) => !isCompilerService(line) && !isFixtureServer(line))
      if (!leaked.length && !listeners.length && !children.length) return
      await new Promise((resolve) => setTimeout(resolve, 100).unref())
    }
    const lines: string[] = []
    if (leaked.length) lines.push(`active handles left by the suite: ${leaked.join(', ')}`)
    if (listeners.length) lines.push(`process listeners left by the suite: ${listeners.join(', ')}`)
    if (children.length) lines.push(`child processes left by the suite:\n  ${children.join('\n  ')}`)
    // In a parallel run each worker's root suite holds one spec file: name it, so the leak has an owner.
    const files = [...new Set((this.test?.parent?.suites ?? []).map((suite) => suite.file).filter(Boolean))]
    throw new Error(`Leak audit failed${files.length ? ` after ${files.join(', ')}` : ''}.\n${lines.join('\n')}`)
  },
}
