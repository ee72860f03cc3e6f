// Issue 46's install path on loopback, for test/koishi-install.slow.spec.ts: our packages packed from the built tree
// and published to a real registry on
// 127.0.0.1 (loopback-registry.ts), and a Koishi project as `npm init koishi` leaves one (koishi, the console, its
// config page and the market installed; its own node_modules) whose npm points at that registry only, started with
// the project's own `koishi start`. The market package is not in it: the console's market installs it.
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process'
import { lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { buildPackages } from './koishi-start.js'
import { type LoopbackRegistry, type MarketIndex, packWorkspaces, startMarketIndex, startRegistry, workspaceClosure } from './loopback-registry.js'
import { offlineEnv, ROOT } from '../helpers.js'
import { freePort } from '@cordis-subagents/test-support'

const run = promisify(execFile)

export const MARKET_PACKAGE = '@cordis-subagents/koishi-plugin-subagents'

/** What a project made by `npm init koishi` depends on (the versions this checkout has installed). */
const PROJECT_DEPENDENCIES = ['koishi', '@koishijs/plugin-console', '@koishijs/plugin-config', '@koishijs/plugin-market']

export interface InstallRig {
  dir: string
  registry: LoopbackRegistry
  index: MarketIndex
  project: string
  /** The tarballs published (one per workspace package the market package needs). */
  published: string[]
  close(): Promise<void>
}

/**
 * The project's node_modules: this checkout's installed packages (hard links, so it takes a second) without our
 * workspace links. It only seeds the project: `npm install` then keeps what the project's dependencies need.
 */
function installedBase(project: string): void {
  const modules = join(project, 'node_modules')
  execFileSync('cp', ['-al', join(ROOT, 'node_modules'), modules])
  for (const entry of readdirSync(modules)) {
    const path = join(modules, entry)
    if (lstatSync(path).isSymbolicLink()) rmSync(path)
    else if (entry.startsWith('@')) for (const inner of readdirSync(path)) if (lstatSync(join(path, inner)).isSymbolicLink()) rmSync(join(path, inner))
  }
  rmSync(join(modules, '.bin'), { recursive: true, force: true })
  rmSync(join(modules, '.package-lock.json'), { force: true })
}

/** Builds, packs and publishes the market package and what it needs, then lays out the Koishi project in `dir`. */
export async function startInstallRig(dir: string): Promise<InstallRig> {
  const dirs = workspaceClosure('koishi-plugin-subagents')
  buildPackages(dirs)
  const published = await packWorkspaces(dirs, join(dir, 'packs'))
  const registry = await startRegistry(join(dir, 'registry'))
  let index: MarketIndex | undefined
  try {
    await registry.publish(published)
    index = await startMarketIndex(registry.url)
    const project = join(dir, 'project')
    mkdirSync(project)
    installedBase(project)
    const dependencies = Object.fromEntries(PROJECT_DEPENDENCIES.map((name) => {
      const { version } = JSON.parse(readFileSync(join(project, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }
      return [name, `^${version}`]
    }))
    writeFileSync(join(project, 'package.json'), `${JSON.stringify({ name: 'koishi-app', private: true, dependencies }, null, 2)}\n`)
    writeFileSync(join(project, '.npmrc'), registry.npmrc(join(dir, 'npm-cache')))
    // npm makes the seeded tree the project's own (a package-lock.json listing what the dependencies need, the rest of
    // the copy removed), as `npm init koishi` leaves a project: the market's npm then only adds to it, and does not
    // prune the copy under the running Koishi.
    await run('npm', ['install', '--no-audit', '--no-fund'], { cwd: project, env: npmEnv() })
    const port = await freePort()
    writeFileSync(join(project, 'koishi.yml'), [
      'plugins:',
      '  server:server:',
      '    host: 127.0.0.1',
      `    port: ${port}`,
      `    maxPort: ${Math.min(port + 50, 65535)}`,
      '  console:console:',
      '    open: false',
      '  config:config: {}',
      '  market:market:',
      '    search:',
      `      endpoint: ${index.url}`,
      '    registry:',
      `      endpoint: ${registry.url}/`,
      '  ./worker.cjs:worker: {}',
      '',
    ].join('\n'))
    writeFileSync(join(project, 'worker.cjs'), "exports.name = 'worker'\nexports.apply = () => console.log('WORKER ' + process.pid)\n")
    const rig = index
    return {
      dir, registry, index, project, published,
      close: async () => { await rig.close(); await registry.stop() },
    }
  } catch (error) {
    await index?.close()
    await registry.stop()
    throw error
  }
}

/** The environment for npm in the project (the market's too): only the project's .npmrc may steer it, not the npm that ran this test. */
function npmEnv(): NodeJS.ProcessEnv {
  const env = offlineEnv()
  for (const key of Object.keys(env)) if (key === 'NODE_OPTIONS' || key.startsWith('KOISHI_') || /^npm_/i.test(key)) delete env[key]
  return env
}

/**
 * Koishi's market (plugin-market 2.11) on Node 20 after npm installed a package the project did not have: it looked
 * the package up before installing (`require.resolve(name + '/package.json')`), Node 20's CommonJS resolver keeps
 * that package.json as missing, so the market's `require.resolve(name)` after the install fails; the market logs
 * this and reloads the whole app, whose new worker loads the package. Every fresh install from the market does so
 * on Node 20 (Koishi's, not this package's).
 */
export const KNOWN_MARKET_ERROR = new RegExp(`\\[E\\] market Error: Cannot find module '${MARKET_PACKAGE}'$`)

/**
 * Once the market's full reload (if it made one) has ended: the new worker runs and the console serves again. The
 * market logs its error (KNOWN_MARKET_ERROR) before it answers the install, the worker writing straight to our pipe;
 * the loader's `trigger full reload` comes only after an IPC round trip, so it may not be here yet when the console
 * shows 安装成功: either line means a reload.
 */
export async function settled(koishi: KoishiProcess): Promise<void> {
  const out = koishi.stdout()
  const reloads = Math.max(out.split('trigger full reload').length - 1, out.split('\n').filter((line) => KNOWN_MARKET_ERROR.test(line)).length)
  if (!reloads) return
  await until(() => koishi.workers() > reloads && koishi.stdout().split('trigger full reload')[reloads]?.includes('console webui is available') || undefined,
    () => koishi.stdout(), 120_000)
}

export interface KoishiProcess {
  url: string
  child: ChildProcess
  stdout(): string
  /** How many workers have started (a full reload starts a new one). */
  workers(): number
  /** SIGTERM to the worker (Koishi's own clean exit), then waits for `koishi start` to end. */
  stop(): Promise<{ code: number | null, stdout: string }>
}

/** `koishi start` with the project's own Koishi; resolves once the console serves. */
export async function startKoishi(project: string): Promise<KoishiProcess> {
  const env = npmEnv()
  const child = spawn(process.execPath, [join(project, 'node_modules/koishi/lib/cli/index.js'), 'start', 'koishi.yml'],
    { cwd: project, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout!.on('data', (chunk) => { out += chunk })
  child.stderr!.on('data', (chunk) => { out += chunk })
  // 'exit', not 'close': a worker left behind would hold the pipes open.
  const done = new Promise<{ code: number | null, stdout: string }>((resolve) => child.on('exit', (code) => resolve({ code, stdout: out })))
  const workerPid = () => Number([...out.matchAll(/^WORKER (\d+)$/gm)].pop()?.[1] ?? 0)
  const stop = async () => {
    // The market's install may restart the worker: the last pid printed is the one running.
    const worker = workerPid()
    try {
      process.kill(worker || child.pid!, worker ? 'SIGTERM' : 'SIGKILL')
    } catch { /* already gone */ }
    const guard = setTimeout(() => {
      for (const pid of [workerPid(), child.pid!]) try { if (pid) process.kill(pid, 'SIGKILL') } catch { /* gone */ }
    }, 60_000)
    try {
      return await done
    } finally {
      clearTimeout(guard)
    }
  }
  try {
    const url = await until(() => /console webui is available at (http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1], () => out, 120_000)
    await until(() => /^WORKER (\d+)$/m.exec(out)?.[1], () => out, 30_000)
    return { url, child, stdout: () => out, workers: () => [...out.matchAll(/^WORKER (\d+)$/gm)].length, stop }
  } catch (error) {
    await stop()
    throw error
  }
}

/** Polls `read` until it gives a value; `bound` only ends a hang (the failure shows what Koishi printed). */
async function until<T>(read: () => T | undefined, output: () => string, bound: number): Promise<T> {
  for (const end = Date.now() + bound; Date.now() < end; await new Promise((resolve) => setTimeout(resolve, 100))) {
    const value = read()
    if (value !== undefined && value !== false) return value
  }
  throw new Error(`not within ${bound} ms; Koishi printed:\n${output()}`)
}
