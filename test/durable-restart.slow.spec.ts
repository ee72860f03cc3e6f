// Issue 30's SIGKILL test: a real host process runs a tree on a real store (SQLite in a temp dir,
// then PostgreSQL), is killed with SIGKILL (no clean stop), and is started again on the same
// store. The parked child is still parked and resumes with the answer; the background child's
// result is still readable; the child that was mid-turn is interrupted and resumes with a new turn;
// no child is started twice (the START lines of both processes, and the store's run count).
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import { freshPostgres } from '../packages/checkpoints/tests/support.js'

const HOST = fileURLToPath(new URL('./support/host-process.ts', import.meta.url))
const ROOT = fileURLToPath(new URL('..', import.meta.url))

interface Phase {
  starts: string[]
  /** The JSON after the line's keyword (READY / DONE). */
  report: Record<string, any>
  child: ChildProcess
  stderr: string[]
}

/** Starts the host in `phase`; resolves at its READY or DONE line (90 s at most), with every START line before it. */
async function runHost(phase: 'first' | 'second', store: string): Promise<Phase> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=cordis-subagents-source', HOST, phase, store], {
    cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'],
  })
  const stderr: string[] = []
  createInterface({ input: child.stderr! }).on('line', (line) => { if (stderr.length < 200) stderr.push(line) })
  const starts: string[] = []
  const lines = createInterface({ input: child.stdout! })
  const keyword = phase === 'first' ? 'READY ' : 'DONE '
  try {
    const report = await new Promise<Record<string, any>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the ${phase} host gave no ${keyword.trim()} line in 90 s`)), 90_000)
      lines.on('line', (line) => {
        if (line.startsWith('START ')) starts.push(line.slice(6))
        if (line.startsWith(keyword)) {
          clearTimeout(timer)
          resolve(JSON.parse(line.slice(keyword.length)))
        }
      })
      child.once('exit', (code, signal) => {
        clearTimeout(timer)
        reject(new Error(`the ${phase} host exited (${code ?? signal}) before ${keyword.trim()}:\n${stderr.join('\n')}`))
      })
    })
    return { starts, report, child, stderr }
  } catch (error) {
    await kill(child)
    throw error
  }
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = once(child, 'exit')
  child.kill('SIGKILL')
  await exited
}

function restartBehaviour(store: () => Promise<string>) {
  it('SIGKILL mid-tree, restart on the same store: parked resumes with the answer, background result kept, mid-turn interrupted and resumed, nothing started twice', async () => {
    const where = await store()
    const first = await runHost('first', where)
    const { bg, ask, hang } = first.report
    expect(new Set(first.starts)).to.deep.equal(new Set([bg, ask, hang]))
    expect(first.starts).to.have.length(3)
    await kill(first.child)
    expect(first.child.signalCode).to.equal('SIGKILL')

    const second = await runHost('second', where)
    const exited = once(second.child, 'exit')
    const report = second.report
    expect(report.interruptedAtStart, 'the mid-turn child (only it was running)').to.equal(1)
    expect(report.askBefore).to.equal('parked')
    expect(report.pending).to.deep.equal({ runId: ask, question: 'Which colour?' })
    expect(report.bg).to.deep.include({ id: bg, state: 'settled', background: true, result: 'one two three' })
    expect(report.hangBefore).to.equal('interrupted')
    expect(report.ask).to.deep.equal({ stopReason: 'completed', output: 'painted blue' })
    expect(report.hang).to.deep.equal({ stopReason: 'completed', output: 'finished after the restart' })
    expect(report.runs, 'no run was recorded twice').to.equal(3)
    // The restart only restored the two it resumed, under their own ids: no new child.
    expect([...second.starts].sort()).to.deep.equal([ask, hang].sort())
    const [code] = await exited
    expect(code, second.stderr.join('\n')).to.equal(0)
  })
}

describe('durable restart: a host killed with SIGKILL and started again', function () {
  this.timeout(240_000)

  describe('on SQLite (a file in a temp dir)', () => {
    let dir: string
    before(() => { dir = mkdtempSync(join(tmpdir(), 'durable-restart-')) })
    after(() => rmSync(dir, { recursive: true, force: true }))
    restartBehaviour(async () => join(dir, 'tree.db'))
  })

  describe('on PostgreSQL (CHECKPOINTS_PG_URL; the test run starts one)', () => {
    restartBehaviour(async () => {
      await freshPostgres()
      return 'postgres'
    })
  })
})
