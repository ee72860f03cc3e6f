// `koishi start` of a temporary Koishi project, the way a Koishi user runs it (in a child process:
// see koishi-yml.spec.ts for why), for the specs whose fixture prints one `RESULT <json>` line and
// stops the app. Exit code 0 shows every plugin closed what it opened.
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { expect } from 'chai'
import { offlineEnv, ROOT } from '../helpers.js'

const KOISHI_CLI = join(ROOT, 'node_modules/koishi/lib/cli/index.js')

/** Runs `koishi start koishi.yml` in `project`, checks it exited 0 without errors, and returns its `RESULT` line parsed. */
export async function koishiStartResult(project: string, timeoutMs: number): Promise<any> {
  const env = offlineEnv()
  for (const key of Object.keys(env)) if (key === 'NODE_OPTIONS' || key.startsWith('KOISHI_')) delete env[key]
  const child = spawn(process.execPath, [KOISHI_CLI, 'start', 'koishi.yml'], { cwd: project, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (chunk) => { stdout += chunk })
  child.stderr!.on('data', (chunk) => { stderr += chunk })
  const code = await new Promise<number | null>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`koishi start did not exit within ${timeoutMs / 1000} s\nstdout:\n${stdout}\nstderr:\n${stderr}`))
    }, timeoutMs)
    child.on('close', (exit) => { clearTimeout(timer); resolve(exit) })
  })
  const output = `stdout:\n${stdout}\nstderr:\n${stderr}`
  expect(code, output).to.equal(0)
  expect(`${stdout}\n${stderr}`).to.not.match(/\[E\]|cannot resolve plugin/)
  const line = stdout.split('\n').find((l) => l.startsWith('RESULT '))
  expect(line, output).to.not.equal(undefined)
  return JSON.parse(line!.slice('RESULT '.length))
}
