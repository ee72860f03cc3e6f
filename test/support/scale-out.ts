// The scale-out deployment (deploy/scale-out/run.sh) as a test fixture: started once, read through
// its state directory (the hosts' model-call logs and span files, nginx's access log), stopped by
// closing its stdin. It fails (never skips) when PostgreSQL or nginx is missing: run.sh says how.
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT } from '../helpers.js'

interface ScaleOutHost {
  name: string
  url: string
  pid: number
}

/** A running scale-out deployment, behind nginx (startScaleOut) or as a bare pool of hosts (./scale-out-pool.ts). */
export interface Deployment {
  hosts: ScaleOutHost[]
  /** Every process the deployment started that must be gone after stop(). */
  pids: number[]
  /** A URL that reaches the deployment's tasks: nginx, or a host that is still alive. */
  front(): string
  token: string
  schema: string
  leaseMs: number
  /** Every model call so far: which host, which `[job:<id>]`, which step of its run (1 = a new run). */
  calls(): Array<{ host: string; job: string; step: number }>
  /** The spans the hosts exported (SCALE_OUT_TRACES=1), each with the host that wrote it. */
  spans(): Array<{ host: string; name: string; traceId: string; spanId: string; parentSpanId?: string }>
  /** Stops everything; 0 when it stopped cleanly. */
  stop(): Promise<number | null>
  stderr(): string
}

export interface ScaleOut extends Deployment {
  url: string
  nginxPid: number
  state: string
  /** The upstream (host:port) of each POST nginx passed on. */
  upstreams(): string[]
}

/** What the hosts write into the state directory: their model-call logs and span files. */
export function readState(state: string): Pick<Deployment, 'calls' | 'spans'> {
  const lines = (file: string) => existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []
  const files = (prefix: string) => existsSync(state) ? readdirSync(state).filter((name) => name.startsWith(prefix)) : []
  return {
    calls: () => files('calls-').flatMap((file) => lines(join(state, file)).map((line) => {
      const [host, job, step] = line.split('\t')
      return { host, job, step: Number(step) }
    })),
    spans: () => files('spans-').flatMap((file) => lines(join(state, file)).map((line) => {
      const span = JSON.parse(line)
      return { host: file.slice('spans-'.length, -'.jsonl'.length), name: span.name, traceId: span.traceId, spanId: span.spanId, parentSpanId: span.parentSpanId }
    })),
  }
}

export async function startScaleOut(env: Record<string, string>, timeoutMs = 90_000): Promise<ScaleOut> {
  const child: ChildProcess = spawn('bash', [join(ROOT, 'deploy/scale-out/run.sh')], {
    cwd: ROOT, env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (chunk: Buffer) => { stdout += chunk.toString('utf8') })
  child.stderr!.on('data', (chunk: Buffer) => { stderr = (stderr + chunk.toString('utf8')).slice(-20_000) })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const ready = await new Promise<Record<string, any>>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`deploy/scale-out/run.sh was not ready within ${timeoutMs} ms:\n${stderr}`)), timeoutMs)
    const check = () => {
      const line = stdout.split('\n').find((text) => text.startsWith('{"ready"'))
      if (line) {
        clearTimeout(timer)
        child.stdout!.off('data', check)
        resolve(JSON.parse(line))
      }
    }
    child.stdout!.on('data', check)
    void exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`deploy/scale-out/run.sh exited (${code}) before it was ready:\n${stderr}`))
    })
  })
  const state: string = ready.state
  const lines = (file: string) => existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []
  let stopping: Promise<number | null> | undefined
  return {
    url: ready.url,
    hosts: ready.hosts,
    nginxPid: ready.nginxPid,
    pids: [...ready.hosts.map((host: ScaleOutHost) => host.pid), ready.nginxPid],
    front: () => ready.url,
    state,
    token: readFileSync(ready.tokenFile, 'utf8'),
    schema: ready.schema,
    leaseMs: ready.leaseMs,
    ...readState(state),
    upstreams: () => lines(join(state, 'nginx-access.log')).filter((line) => line.startsWith('POST ')).map((line) => line.split(' ')[3]),
    stop: () => stopping ??= (async () => {
      child.stdin!.end()
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000)
      const code = await exited
      clearTimeout(timer)
      return code
    })(),
    stderr: () => stderr,
  }
}
