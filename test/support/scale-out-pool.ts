// The scale-out deployment without nginx, for `npm test`: the same serving hosts as deploy/scale-out/run.sh
// (deploy/scale-out/host.yml, its scripted model, the shared store in a fresh PostgreSQL schema), started
// here as processes on loopback; the parent reaches them through provider-a2a's own pool (`urls`).
// Each host exits when its stdin ends (this process died), so none outlives the run.
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { alive, ROOT } from '../helpers.js'
import { type Deployment, readState } from './scale-out.js'

const DEPLOY = join(ROOT, 'deploy/scale-out')
const START_TIMEOUT_MS = 60_000

interface Started { name: string; url: string; pid: number; child: ChildProcess; exited: Promise<number | null>; stderr(): string }

function startHost(name: string, config: string, env: Record<string, string>): Promise<Started> {
  const child = spawn(process.execPath, [join(ROOT, 'examples/quickstart/lib/a2a-server.js'), '--config', config, '--root', ROOT, '--exit-with-stdin'], {
    cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env, SCALE_OUT_HOST_NAME: name, SCALE_OUT_HOST_PORT: '0' },
  })
  let stdout = ''
  let stderr = ''
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  child.stderr!.on('data', (chunk: Buffer) => { stderr = (stderr + chunk.toString('utf8')).slice(-20_000) })
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start within ${START_TIMEOUT_MS} ms:\n${stderr}`)), START_TIMEOUT_MS)
    void exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`${name} exited (${code}) before it served:\n${stderr}`))
    })
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8')
      const line = stdout.split('\n').find((text) => text.startsWith('{"url"'))
      if (!line) return
      clearTimeout(timer)
      resolve({ name, url: JSON.parse(line).url, pid: child.pid!, child, exited, stderr: () => stderr })
    })
  })
}

/** `count` hosts of one shared deployment (names host-a, host-b, ...); `env` as for run.sh (SCALE_OUT_*). */
export async function startScaleOutPool(env: Record<string, string>, count = 3): Promise<Deployment> {
  const pgUrl = process.env.SCALE_OUT_PG_URL ?? process.env.CHECKPOINTS_PG_URL
  if (!pgUrl) throw new Error('no PostgreSQL for the pool: set CHECKPOINTS_PG_URL (the test run starts one when it is unset)')
  const state = mkdtempSync(join(tmpdir(), 'scale-out-pool-'))
  const schema = `scale_out_pool_${randomBytes(4).toString('hex')}`
  const token = randomBytes(24).toString('base64url')
  const leaseMs = Number(env.SCALE_OUT_LEASE_MS ?? 15_000)
  const config = join(state, 'host.yml')
  writeFileSync(config, readFileSync(join(DEPLOY, 'host.yml'), 'utf8').replaceAll('@SCALE_OUT_DIR@', DEPLOY))
  const hosts: Started[] = []
  const dropSchema = async () => {
    const sql = postgres(pgUrl, { max: 1, connect_timeout: 10, onnotice: () => {} })
    try {
      await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    } finally {
      await sql.end({ timeout: 5 })
    }
  }
  const stopAll = async () => {
    for (const host of hosts) host.child.stdin!.end()
    await Promise.all(hosts.map(async (host) => {
      const timer = setTimeout(() => host.child.kill('SIGKILL'), 30_000)
      await host.exited
      clearTimeout(timer)
    }))
  }
  try {
    for (let i = 0; i < count; i++) {
      const name = `host-${String.fromCharCode(97 + i)}`
      hosts.push(await startHost(name, config, {
        ...env,
        SCALE_OUT_SCHEMA: schema, SCALE_OUT_TOKEN: token, A2A_DATABASE_URL: pgUrl, SCALE_OUT_LEASE_MS: String(leaseMs),
        SCALE_OUT_CALL_LOG: join(state, `calls-${name}.log`),
        ...env.SCALE_OUT_TRACES === '1' ? { QUICKSTART_TRACE_FILE: join(state, `spans-${name}.jsonl`) } : {},
      }))
    }
  } catch (error) {
    await stopAll()
    rmSync(state, { recursive: true, force: true })
    throw error
  }
  let stopping: Promise<number | null> | undefined
  return {
    hosts: hosts.map(({ name, url, pid }) => ({ name, url, pid })),
    pids: hosts.map((host) => host.pid),
    front: () => hosts.find((host) => alive(host.pid))!.url,
    token,
    schema,
    leaseMs,
    ...readState(state),
    stop: () => stopping ??= (async () => {
      await stopAll()
      await dropSchema()
      rmSync(state, { recursive: true, force: true })
      // A host SIGKILLed by a test exits with no code: only a clean stop of the survivors counts.
      const codes = await Promise.all(hosts.map((host) => host.exited))
      return codes.every((code) => code === 0 || code === null) ? 0 : 1
    })(),
    stderr: () => hosts.map((host) => `--- ${host.name}\n${host.stderr()}`).join('\n'),
  }
}
