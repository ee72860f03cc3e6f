// `koishi start` of a temporary Koishi project, the way a Koishi user runs it (in a child process:
// see koishi-yml.slow.spec.ts for why). Exit code 0 shows every plugin closed what it opened.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { join } from 'node:path'
import { expect } from 'chai'
import { offlineEnv, ROOT } from '../helpers.js'

const KOISHI_CLI = join(ROOT, 'node_modules/koishi/lib/cli/index.js')

export interface KoishiRun { code: number | null, signal: NodeJS.Signals | null, stdout: string, stderr: string }

interface KoishiStart { child: ChildProcess, done: Promise<KoishiRun> }

/** Starts `koishi start koishi.yml` in `cwd`; `done` rejects with its output if it has not exited after `guard` ms. */
export function koishiStart(cwd: string, guard: number, extraEnv: Record<string, string> = {}): KoishiStart {
  const env = offlineEnv()
  for (const key of Object.keys(env)) if (key === 'NODE_OPTIONS' || key.startsWith('KOISHI_')) delete env[key]
  Object.assign(env, extraEnv)
  const child = spawn(process.execPath, [KOISHI_CLI, 'start', 'koishi.yml'], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (chunk) => { stdout += chunk })
  child.stderr!.on('data', (chunk) => { stderr += chunk })
  const done = new Promise<KoishiRun>((resolve, reject) => {
    // A worker that never exits has something of ours still running: fail with its output.
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`koishi start did not exit within ${guard} ms\nstdout:\n${stdout}\nstderr:\n${stderr}`))
    }, guard)
    child.on('close', (code, signal) => { clearTimeout(timer); resolve({ code, signal, stdout, stderr }) })
  })
  return { child, done }
}

/** Builds these packages' lib/ (the Koishi worker runs it, without the `cordis-subagents-source` condition); a no-op when current. */
export function buildPackages(packages: readonly string[]): void {
  execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-b', ...packages.map((p) => `packages/${p}`)], { cwd: ROOT, stdio: 'pipe' })
}

/** The fixture's one `RESULT <json>` line, parsed (fails with the run's output when there is none). */
export function resultOf(run: KoishiRun): any {
  const line = run.stdout.split('\n').find((l) => l.startsWith('RESULT '))
  expect(line, `no RESULT line\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`).to.not.equal(undefined)
  return JSON.parse(line!.slice('RESULT '.length))
}

/** For a fixture that prints one `RESULT <json>` line and stops the app: checks a clean exit 0 and returns the line parsed. */
export async function koishiStartResult(project: string, guard: number): Promise<any> {
  const run = await koishiStart(project, guard).done
  expect(run.code, `stdout:\n${run.stdout}\nstderr:\n${run.stderr}`).to.equal(0)
  expect(`${run.stdout}\n${run.stderr}`).to.not.match(/\[E\]|cannot resolve plugin/)
  return resultOf(run)
}
