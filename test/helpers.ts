import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

export const ROOT = fileURLToPath(new URL('..', import.meta.url))
export const QUICKSTART = fileURLToPath(new URL('../examples/quickstart/', import.meta.url))
export const CLI = fileURLToPath(new URL('../examples/quickstart/lib/cli.js', import.meta.url))
/** The quick start's ACP agent as cordis.yml starts it: serve-acp's bin serving acp-agent.yml (`node ...ACP_AGENT`). */
export const ACP_AGENT = [join(ROOT, 'node_modules/@cordis-subagents/serve-acp/lib/bin.js'), join(QUICKSTART, 'acp-agent.yml')]

/** Builds the quick start (and what it references) so lib/ is current; a no-op when up to date. */
export function buildQuickstart() {
  execFileSync(process.execPath, [fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url)), '-b', 'examples/quickstart'], {
    cwd: ROOT, stdio: 'pipe',
  })
}

/**
 * Marks what this test process starts with offlineEnv(): `npm test` runs spec files in two workers at once,
 * and each must tell its own quick start ACP agents from the other's. An `XDG_*` name because provider-acp's
 * `inherit: core` passes those on to the agent process (any other name of ours would be dropped there).
 */
const RUN_MARK = `XDG_CORDIS_SUBAGENTS_TEST_RUN=${process.pid}`

/** The environment of this process without OPENAI_* (so the quick start stays offline), marked as this process's. */
export function offlineEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('OPENAI_')) env[key] = value
  delete env.SUBAGENT_DEPTH
  const [markName, markValue] = RUN_MARK.split('=')
  return { ...env, [markName]: markValue, ...extra }
}

/** Whether a process was started from this test process's offlineEnv() (a gone or unreadable one is not). */
function startedHere(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(RUN_MARK)
  } catch {
    return false
  }
}

export interface Cli {
  child: ChildProcess
  stdout(): string
  stderr(): string
  /** Resolves with the exit code once the process has exited. */
  exited: Promise<number | null>
  /** Resolves once stdout matches. Rejects if the process exits first. */
  waitFor(pattern: RegExp, timeout?: number): Promise<RegExpMatchArray>
}

export function runCli(args: string[], env: NodeJS.ProcessEnv = offlineEnv()): Cli {
  const child = spawn(process.execPath, [CLI, ...args], { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  const waiters = new Set<() => void>()
  child.stdout!.on('data', (chunk) => { out += chunk; for (const wake of waiters) wake() })
  child.stderr!.on('data', (chunk) => { err += chunk })
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => { resolve(code); for (const wake of waiters) wake() }))
  let done = false
  exited.then(() => { done = true })
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitFor(pattern, timeout = 15_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => { waiters.delete(check); reject(new Error(`timed out waiting for ${pattern}; stdout so far:\n${out}\nstderr:\n${err}`)) }, timeout)
        const check = () => {
          const match = out.match(pattern)
          if (match) { clearTimeout(timer); waiters.delete(check); resolve(match) }
          else if (done) { clearTimeout(timer); waiters.delete(check); reject(new Error(`process exited before ${pattern}; stdout:\n${out}\nstderr:\n${err}`)) }
        }
        waiters.add(check)
        check()
      })
    },
  }
}

export { processAlive as alive } from '@cordis-subagents/test-support'

/** Processes of the quick start's ACP agent started from this test process: the bin on acp-agent.yml, or the lib/acp-agent.js shim. */
export function acpAgentProcesses(): string[] {
  return [...processesMatching(join(QUICKSTART, 'acp-agent.yml')), ...processesMatching(join(QUICKSTART, 'lib/acp-agent.js'))]
    .filter((line) => startedHere(Number(line.trim().split(/\s+/)[0])))
}

/** A cordis.yml of the quick start with its `loader.url`-relative paths made absolute, for a copy kept elsewhere. */
export function withAbsolutePaths(yml: string): string {
  return yml.replace(/!!js "decodeURIComponent\(new URL\('([^']+)', loader\.url\)\.pathname\)"/g,
    (_, relative: string) => JSON.stringify(fileURLToPath(new URL(relative, pathToFileURL(QUICKSTART)))))
}

/** Command lines of running processes that mention `needle`. */
export function processesMatching(needle: string): string[] {
  // `ps -e` lists at least itself, so a failure is the machine's (a fork refused under load): ask again,
  // rather than report "nothing left" for a list never read.
  for (let attempt = 1; ; attempt++) {
    try {
      return execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' })
        .split('\n').filter((line) => line.includes(needle) && !line.includes(' ps -eo '))
    } catch (error) {
      if (attempt >= 3) throw error
    }
  }
}

export async function eventually(check: () => boolean, timeout = 5000): Promise<boolean> {
  const deadline = Date.now() + timeout
  while (Date.now() < deadline) {
    if (check()) return true
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  return check()
}
