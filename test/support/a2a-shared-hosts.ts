// Serve-a2a hosts of one shared deployment as real processes (test/fixtures/a2a-shared-host.ts),
// on loopback, with their tasks in a fresh PostgreSQL schema; every model call logged to a file.
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { ROOT } from '../helpers.js'

const PG_URL = process.env.CHECKPOINTS_PG_URL ?? 'postgres://subagents:subagents@127.0.0.1:5432/subagents_test'
const HOST = join(ROOT, 'test/fixtures/a2a-shared-host.ts')
const TOKEN = 'host-failure-token-0123456789abcdef'

interface SharedHost {
  name: string
  url: string
  pid: number
  /** Parked and running tasks of the process now. */
  stats(): Promise<{ parked: number; running: number }>
  kill(): Promise<void>
  stop(): Promise<void>
}

export interface Deployment {
  schema: string
  start(name: string): Promise<SharedHost>
  /** A JSON-RPC call (A2A 1.0) to one host. */
  rpc(host: SharedHost, method: string, params: unknown): Promise<any>
  /** The model calls of one job, in order: `<host> <what>`. */
  calls(job: string): string[]
  close(): Promise<void>
}

export async function deployment(leaseMs: number): Promise<Deployment> {
  const schema = `host_failure_${randomBytes(4).toString('hex')}`
  const dir = mkdtempSync(join(tmpdir(), 'a2a-host-failure-'))
  const log = join(dir, 'calls.tsv')
  const hosts: Array<{ child: ChildProcess; exited: Promise<unknown> }> = []
  const sql = postgres(PG_URL, { max: 1, connect_timeout: 5, onnotice: () => {} })
  try {
    await sql`SELECT 1`
  } catch (error) {
    await sql.end({ timeout: 1 })
    throw new Error(`PostgreSQL is not reachable at ${PG_URL.replace(/:[^:@/]*@/, ':***@')}: the test run starts one (test/setup/test-postgres.ts) unless CHECKPOINTS_PG_URL names yours`, { cause: error })
  }
  return {
    schema,
    async start(name) {
      const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=cordis-subagents-source', HOST], {
        cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'],
        env: { ...process.env, HOST_NAME: name, PG_URL, SCHEMA: schema, LEASE_MS: String(leaseMs), TOKEN, CALL_LOG: log },
      })
      const exited = new Promise((resolve) => child.once('exit', resolve))
      hosts.push({ child, exited })
      let stdout = ''
      let stderr = ''
      const waiters: Array<() => void> = []
      child.stdout!.on('data', (chunk: Buffer) => {
        stdout += chunk.toString('utf8')
        for (const waiter of waiters.splice(0)) waiter()
      })
      child.stderr!.on('data', (chunk: Buffer) => { stderr = (stderr + chunk.toString('utf8')).slice(-10_000) })
      const line = (prefix: string, from: number) => new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${name}: no ${prefix} line within 60 s:\n${stderr}`)), 60_000)
        const check = () => {
          const found = stdout.slice(from).split('\n').find((text) => text.startsWith(prefix))
          if (found) {
            clearTimeout(timer)
            return resolve(found.slice(prefix.length))
          }
          waiters.push(check)
        }
        void exited.then(() => { clearTimeout(timer); reject(new Error(`${name} exited before ${prefix}:\n${stderr}`)) })
        check()
      })
      const url = await line('READY ', 0)
      return {
        name, url, pid: child.pid!,
        async stats() {
          const from = stdout.length
          child.stdin!.write('stats\n')
          return JSON.parse(await line('STATS ', from))
        },
        async kill() {
          child.kill('SIGKILL')
          await exited
        },
        async stop() {
          child.stdin!.end()
          await exited
        },
      }
    },
    async rpc(host, method, params) {
      const response = await fetch(`${host.url}/a2a/jsonrpc`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: randomUUID(), method, params }),
      })
      return response.json()
    },
    calls(job) {
      if (!existsSync(log)) return []
      return readFileSync(log, 'utf8').split('\n').filter(Boolean).map((text) => text.split('\t'))
        .filter(([, of]) => of === job).map(([host, , what]) => `${host} ${what}`)
    },
    async close() {
      for (const { child, exited } of hosts) {
        if (child.exitCode === null && child.signalCode === null) child.stdin!.end()
        await exited
      }
      await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
      await sql.end({ timeout: 1 })
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** A user message (1.0 JSON), on `task` when given. */
export function message(text: string, task?: { id: string; contextId: string }) {
  return { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }], ...task ? { taskId: task.id, contextId: task.contextId } : {} }
}
