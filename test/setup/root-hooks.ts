// Root hooks for the whole suite: a leak audit that fails the run when a test leaves
// child processes or active handles behind.
import { execFileSync } from 'node:child_process'

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

let baseline: Map<string, number>

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

export const mochaHooks = {
  async beforeAll() {
    await warmUpCompiler()
    baseline = countBy(activeResources())
  },
  async afterAll() {
    // Give sockets and exited children a moment to be released by the event loop.
    let leaked: string[] = []
    let children: string[] = []
    for (let attempt = 0; attempt < 20; attempt++) {
      const now = countBy(activeResources())
      leaked = []
      for (const [kind, count] of now) {
        const extra = count - (baseline.get(kind) ?? 0)
        if (extra > 0) leaked.push(`${kind} x${extra}`)
      }
      children = childProcesses().filter((line) => !isCompilerService(line))
      if (!leaked.length && !children.length) return
      await new Promise((resolve) => setTimeout(resolve, 100).unref())
    }
    const lines: string[] = []
    if (leaked.length) lines.push(`active handles left by the suite: ${leaked.join(', ')}`)
    if (children.length) lines.push(`child processes left by the suite:\n  ${children.join('\n  ')}`)
    throw new Error(`Leak audit failed.\n${lines.join('\n')}`)
  },
}
