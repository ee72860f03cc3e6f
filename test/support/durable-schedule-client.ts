// Drives one durable schedule host process (durable-schedule-host.ts) over its line protocol, with
// a bound on every reply, and reads the schedule's append-only log.
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, readFileSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import type { LogEntry } from './durable-schedule-model.js'

const HOST = fileURLToPath(new URL('./durable-schedule-host.ts', import.meta.url))
const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/**
 * Every reply must arrive within this bound (generous: a loaded 2-core machine starts a tsx host in
 * a few seconds; the host gives up on a task that does not come to rest after 20 s and says so).
 */
const REPLY_BOUND_MS = 45_000

export type Reply = Record<string, any> & { n: number }

/**
 * The next host, spawned as the one before it starts: a host process spends most of its start loading modules,
 * which needs no store, so that part runs while the host before it starts and plays. It opens its store only
 * when `start` hands it one (after the host before it was stopped or killed); `dropSpare` kills it.
 */
let spare: HostProcess | undefined

export class HostProcess {
  private readonly replies = new Map<number, (reply: Reply) => void>()
  private readonly stderr: string[] = []
  private next = 1
  private exited = false

  private constructor(readonly child: ChildProcess) {
    createInterface({ input: child.stderr! }).on('line', (line) => { if (this.stderr.length < 100) this.stderr.push(line) })
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (!line.startsWith('{')) return
      const reply = JSON.parse(line) as Reply
      this.replies.get(reply.n)?.(reply)
      this.replies.delete(reply.n)
    })
    child.once('exit', () => { this.exited = true })
    // A write to a host that died fails on its pipe: its exit is what `await` reports.
    child.stdin!.on('error', () => {})
  }

  /** Starts a host on `store` (a SQLite file or `postgres`) logging to `log`; resolves at its ready line. */
  static async start(store: string, log: string): Promise<{ host: HostProcess; ready: Reply }> {
    const host = spare ?? HostProcess.spawn()
    host.child.stdin!.write(`${JSON.stringify({ open: [store, log] })}\n`)
    spare = HostProcess.spawn()
    try {
      return { host, ready: await host.await(0, 'ready') }
    } catch (error) {
      await host.kill()
      throw error
    }
  }

  /** Kills the spare host (`start` made it), if there is one: at the end of a test. */
  static async dropSpare(): Promise<void> {
    const host = spare
    spare = undefined
    await host?.kill()
  }

  /** A host process that loads its modules, then waits for the store it is to open (its first line in). */
  private static spawn(): HostProcess {
    return new HostProcess(spawn(process.execPath, ['--import', 'tsx', '--conditions=cordis-subagents-source', HOST], {
      cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'], env: process.env,
    }))
  }

  /** Sends one command; rejects when its reply does not come within REPLY_BOUND_MS (a waiter outlived its bound). */
  send(command: Record<string, unknown>): Promise<Reply> {
    const n = this.next++
    this.child.stdin!.write(`${JSON.stringify({ ...command, n })}\n`)
    return this.await(n, JSON.stringify(command))
  }

  private await(n: number, what: string): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.replies.delete(n)
        reject(new BoundError(`no reply to ${what} within ${REPLY_BOUND_MS} ms`))
      }, REPLY_BOUND_MS)
      const onExit = () => {
        clearTimeout(timer)
        reject(new Error(`the host exited before replying to ${what}:\n${this.stderr.join('\n')}`))
      }
      if (this.exited) return onExit()
      this.child.once('exit', onExit)
      this.replies.set(n, (reply) => {
        clearTimeout(timer)
        this.child.off('exit', onExit)
        resolve(reply)
      })
    })
  }

  /** The host's clean stop (`ctx.stop()`), then its exit (code 0). */
  async stop(): Promise<Reply> {
    const exit = this.exited ? Promise.resolve() : once(this.child, 'exit')
    const reply = await this.send({ cmd: 'stop' })
    await exit
    if (this.child.exitCode !== 0) throw new Error(`the host exited ${this.child.exitCode ?? this.child.signalCode} after its stop`)
    return reply
  }

  async kill(): Promise<void> {
    if (this.exited || this.child.exitCode !== null || this.child.signalCode !== null) return
    const exited = once(this.child, 'exit')
    this.child.kill('SIGKILL')
    await exited
  }
}

export class BoundError extends Error {}

export function readLog(file: string): LogEntry[] {
  if (!existsSync(file)) return []
  return readFileSync(file, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as LogEntry)
}
