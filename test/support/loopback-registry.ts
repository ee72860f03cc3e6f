// A real npm registry on 127.0.0.1 for test/koishi-install.slow.spec.ts: verdaccio (from npm) in a child process with
// its storage in a temporary directory. Our packages are published to it with `npm publish` of the tarballs `npm pack`
// made from the built tree; any other name it proxies from the mirror of this checkout's node_modules (npm-mirror.ts),
// so nothing leaves 127.0.0.1. Also the market's search index, built from the registry's own search answer.
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { createServer, type Server } from 'node:http'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'
import { offlineEnv, ROOT } from '../helpers.js'
import type { SearchObject } from '@koishijs/registry'
import { startNpmMirror } from './npm-mirror.js'
import { freePort } from '@cordis-subagents/test-support'

const run = promisify(execFile)
// CommonJS with a default export: required, so the class is the default (an ESM import would give the module).
const Scanner = (createRequire(import.meta.url)('@koishijs/registry') as typeof import('@koishijs/registry')).default
const VERDACCIO = join(dirname(createRequire(import.meta.url).resolve('verdaccio/package.json')), 'bin/verdaccio')

/**
 * The workspace packages (directories under packages/) the one in `dir` needs at run time (dependencies and peers,
 * transitively), its own directory first.
 */
export function workspaceClosure(dir: string): string[] {
  const byName = new Map<string, string>()
  type Manifest = { name: string, dependencies?: Record<string, string>, peerDependencies?: Record<string, string> }
  const manifests = new Map<string, Manifest>()
  for (const entry of readdirSync(join(ROOT, 'packages'))) {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'packages', entry, 'package.json'), 'utf8')) as Manifest
    byName.set(manifest.name, entry)
    manifests.set(entry, manifest)
  }
  const seen: string[] = []
  const visit = (entry: string) => {
    if (seen.includes(entry)) return
    seen.push(entry)
    const manifest = manifests.get(entry)!
    for (const name of Object.keys({ ...manifest.dependencies, ...manifest.peerDependencies })) {
      const inner = byName.get(name)
      if (inner) visit(inner)
    }
  }
  visit(dir)
  return seen
}

/** `npm pack` of each workspace package (from its built lib/) into `into`; the tarballs' paths. */
export async function packWorkspaces(dirs: readonly string[], into: string): Promise<string[]> {
  mkdirSync(into, { recursive: true })
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', into, ...dirs.flatMap((dir) => ['-w', `packages/${dir}`])],
    { cwd: ROOT, env: offlineEnv(), maxBuffer: 64 * 1024 * 1024 })
  return (JSON.parse(stdout) as { filename: string }[]).map((entry) => join(into, entry.filename))
}

export interface LoopbackRegistry {
  url: string
  /** Everything verdaccio printed so far. */
  log(): string
  /** An .npmrc for this registry: its address, the cache in `dir`, and the token `publish` used. */
  npmrc(cache: string): string
  publish(tarballs: readonly string[]): Promise<void>
  stop(): Promise<void>
}

/** Starts verdaccio with its storage under `dir`, our scope local and everything else from the node_modules mirror. */
export async function startRegistry(dir: string): Promise<LoopbackRegistry> {
  const mirror = await startNpmMirror(join(ROOT, 'node_modules'))
  mkdirSync(dir, { recursive: true })
  const config = join(dir, 'config.yaml')
  writeFileSync(config, [
    `storage: ${join(dir, 'storage')}`,
    'auth:',
    `  htpasswd: { file: ${join(dir, 'htpasswd')}, max_users: 1 }`,
    `uplinks: { mirror: { url: '${mirror.url}/', cache: false, timeout: 60s } }`,
    'packages:',
    `  '@cordis-subagents/*': { access: $all, publish: $authenticated }`,
    `  '**': { access: $all, publish: $authenticated, proxy: mirror }`,
    'log: { type: stdout, format: pretty, level: warn }',
    'web: { enable: false }',
    'publish: { allow_offline: true }',
    '',
  ].join('\n'))
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const child: ChildProcess = spawn(process.execPath, [VERDACCIO, '-c', config, '-l', `127.0.0.1:${port}`],
    { cwd: dir, env: offlineEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout!.on('data', (chunk) => { out += chunk })
  child.stderr!.on('data', (chunk) => { out += chunk })
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()))
  const stop = async () => {
    // verdaccio's SIGTERM waits for idle keep-alive connections (fetch's among them): SIGKILL after a grace.
    child.kill('SIGTERM')
    const grace = setTimeout(() => child.kill('SIGKILL'), 5_000)
    await exited
    clearTimeout(grace)
    await mirror.close()
  }
  let token = ''
  try {
    for (const end = Date.now() + 60_000; ; await new Promise((resolve) => setTimeout(resolve, 100))) {
      if (child.exitCode !== null) throw new Error(`verdaccio exited:\n${out}`)
      if (Date.now() > end) throw new Error(`verdaccio did not answer within 60 s:\n${out}`)
      if (await fetch(`${url}/-/ping`).then((response) => response.ok, () => false)) break
    }
    const response = await fetch(`${url}/-/user/org.couchdb.user:publisher`, {
      method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'publisher', password: 'loopback-only' }),
    })
    token = ((await response.json()) as { token?: string }).token ?? ''
    if (!token) throw new Error(`verdaccio gave no token (${response.status}):\n${out}`)
  } catch (error) {
    await stop()
    throw error
  }
  const npmrc = (cache: string) => `registry=${url}/\n//127.0.0.1:${port}/:_authToken=${token}\ncache=${cache}\n`
    + 'audit=false\nfund=false\nupdate-notifier=false\n'
  const publish = async (tarballs: readonly string[]) => {
    const userconfig = join(dir, 'publish.npmrc')
    writeFileSync(userconfig, npmrc(join(dir, 'publish-cache')))
    const queue = [...tarballs]
    await Promise.all([0, 1, 2, 3].map(async () => {
      for (let tarball = queue.shift(); tarball; tarball = queue.shift()) {
        await run('npm', ['publish', tarball, '--userconfig', userconfig, '--registry', `${url}/`], { cwd: dir, env: offlineEnv() })
      }
    }))
  }
  return { url, log: () => out, npmrc, publish, stop }
}

export interface MarketIndex { url: string, server: Server, close(): Promise<void> }

/**
 * The market's search endpoint (plugin-market's `search.endpoint`), built as Koishi's own index is: the names come
 * from the registry's search (`/-/v1/search`), and @koishijs/registry's Scanner reads each package's versions and
 * `koishi` metadata from the registry and concludes the entry the market shows (manifest, shortname, dates).
 */
export async function startMarketIndex(registry: string): Promise<MarketIndex> {
  const request = async <T>(path: string): Promise<T> => {
    const response = await fetch(`${registry}${path.startsWith('/') ? '' : '/'}${path}`)
    if (!response.ok) throw new Error(`${response.status} from the loopback registry for ${path}`)
    return await response.json() as T
  }
  const server = createServer((_request, response) => {
    void (async () => {
      const scanner = new Scanner(request)
      const found = await request<{ objects: SearchObject[] }>('/-/v1/search?text=koishi+plugin&size=250')
      // The registry's search answers without the date npm's has; the scanner takes the dates from the packuments.
      scanner.objects = found.objects.filter((object) => Scanner.isPlugin(object.package.name))
        .map((object) => ({ ...object, package: { ...object.package, date: new Date().toISOString(), links: {}, publisher: { name: 'publisher', email: 'publisher@127.0.0.1' }, maintainers: [] } }))
      await scanner.analyze({ version: '4' })
      const objects = scanner.objects.filter((object) => !object.ignored)
        .map((object) => ({ ...object, rating: 5, portable: false, downloads: { lastMonth: 0 }, license: (object.package as { license?: string }).license ?? '' }))
      response.writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ version: 1, objects, total: objects.length, time: new Date().toUTCString() }))
    })().catch((error: Error) => response.writeHead(502).end(error.message))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/index.json`
  const close = () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) })
  return { url, server, close }
}
