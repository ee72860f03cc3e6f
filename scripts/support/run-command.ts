// One bounded subprocess for the package checks: its exit code and output, never a hang.
import { spawn } from 'node:child_process'

export interface CommandResult {
  /** The exit code; null when the process was killed (by the time bound or a signal). */
  code: number | null
  stdout: string
  stderr: string
  timedOut: boolean
}

export interface CommandOptions {
  cwd: string
  env?: NodeJS.ProcessEnv
  /** Written to stdin, which is then closed (stdin is closed at once without it). */
  input?: string
  /** Ends stdin only once stdout has matched this (a server answering a request, then told to stop). */
  endInputWhen?: RegExp
  /** The process (and its group) is killed after this long (ms). */
  timeoutMs: number
  /** Characters kept per stream (default 64 KiB): the end of a long log is what names a failure. */
  maxOutput?: number
}

const MAX_OUTPUT = 64 * 1024

function keep(text: string, chunk: Buffer, max: number): string {
  const next = text + chunk.toString('utf8')
  return next.length > max ? next.slice(-max) : next
}

/**
 * The environment a subprocess of the checks gets: without the `npm_*` variables `npm run` sets, which
 * would point a nested `npm install` at the repository (npm_config_local_prefix and the like).
 */
function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name) && name !== 'INIT_CWD'))
  return { ...env, ...extra }
}

export function runCommand(command: string, args: readonly string[], options: CommandOptions): Promise<CommandResult> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? cleanEnv(), detached: true, stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    let timedOut = false
    const max = options.maxOutput ?? MAX_OUTPUT
    const timer = setTimeout(() => {
      timedOut = true
      try { process.kill(-child.pid!, 'SIGKILL') } catch {}
    }, options.timeoutMs)
    child.stdin.on('error', () => {})
    child.stdout.on('data', (chunk: Buffer) => {
      stdout = keep(stdout, chunk, max)
      if (options.endInputWhen?.test(stdout)) child.stdin.end()
    })
    child.stderr.on('data', (chunk: Buffer) => { stderr = keep(stderr, chunk, max) })
    if (options.input !== undefined) child.stdin.write(options.input)
    if (!options.endInputWhen) child.stdin.end()
    child.on('error', (error) => { stderr += String(error) })
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr, timedOut })
    })
  })
}

/** The result as a few lines for a failure report. */
export function describeResult(label: string, result: CommandResult): string {
  const tail = (text: string) => text.trim().split('\n').slice(-15).join('\n    ')
  const how = result.timedOut ? 'timed out' : `exited ${result.code}`
  return `${label} ${how}\n    stdout: ${tail(result.stdout) || '(empty)'}\n    stderr: ${tail(result.stderr) || '(empty)'}`
}
